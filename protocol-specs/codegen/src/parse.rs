//! Reads Strata's spec line format (`protocol-specs/README.md`) into the model: a header line
//! (`<kind> <Name> [key=N] versions=R flexible=R`), the message's fields indented two spaces a
//! level (a struct's fields follow the field that first uses it), then `struct` blocks for
//! structs several fields share. Blank lines and `#` comment lines are skipped.
//!
//! Errors name the line (1-based, in the file as written) so a bad spec stops the build with a
//! message that points at it.

use std::fmt;

use crate::model::{Field, Kind, SharedStruct, Spec, Ty};
use crate::range::Range;

/// Why a spec could not be read, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based; 0 when the file has no header line at all.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// A meaningful line: its 1-based number and text.
type Line<'a> = (usize, &'a str);

fn error(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

fn range(line: usize, s: &str) -> Result<Range, ParseError> {
    Range::parse(s).ok_or_else(|| error(line, format!("bad version range `{s}`")))
}

fn indent_of(text: &str) -> usize {
    (text.len() - text.trim_start().len()) / 2
}

pub fn parse_spec(text: &str) -> Result<Spec, ParseError> {
    let lines: Vec<Line> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    let Some(&(head_no, head)) = lines.first() else {
        return Err(error(0, "no header line"));
    };
    let mut spec = parse_header(head_no, head)?;
    let mut pos = 1;
    spec.fields = parse_fields(&lines, &mut pos, 1)?;
    while let Some(&(no, text)) = lines.get(pos) {
        let mut toks = text.split_whitespace();
        if toks.next() != Some("struct") {
            return Err(error(
                no,
                format!("expected `struct <Name>`, found `{text}`"),
            ));
        }
        let name = toks
            .next()
            .ok_or_else(|| error(no, "`struct` without a name"))?
            .to_string();
        // Checked for typos, otherwise unused (see `SharedStruct`).
        range(no, toks.next().unwrap_or("@0+").trim_start_matches('@'))?;
        pos += 1;
        let fields = parse_fields(&lines, &mut pos, 1)?;
        spec.structs.push(SharedStruct { name, fields });
    }
    Ok(spec)
}

fn parse_header(no: usize, text: &str) -> Result<Spec, ParseError> {
    let mut toks = text.split_whitespace();
    let kind = toks.next().unwrap_or_default();
    let kind = Kind::parse(kind).ok_or_else(|| {
        error(
            no,
            format!("unknown kind `{kind}` (request, response or data)"),
        )
    })?;
    let name = toks
        .next()
        .ok_or_else(|| error(no, "header without a message name"))?
        .to_string();
    let mut spec = Spec {
        kind,
        name,
        api_key: None,
        versions: Range::NONE,
        flexible: Range::NONE,
        fields: vec![],
        structs: vec![],
    };
    for t in toks {
        let (k, v) = t
            .split_once('=')
            .ok_or_else(|| error(no, format!("expected key=value in the header, found `{t}`")))?;
        match k {
            "key" => {
                spec.api_key = Some(
                    v.parse()
                        .map_err(|_| error(no, format!("bad API key `{v}`")))?,
                )
            }
            "versions" => spec.versions = range(no, v)?,
            "flexible" => spec.flexible = range(no, v)?,
            _ => return Err(error(no, format!("unknown header key `{k}`"))),
        }
    }
    Ok(spec)
}

/// Parses the lines at `indent` (and, recursively, their children) into fields; stops at a
/// shallower line or a `struct` block.
fn parse_fields(lines: &[Line], pos: &mut usize, indent: usize) -> Result<Vec<Field>, ParseError> {
    let mut out = Vec::new();
    while let Some(&(no, text)) = lines.get(*pos) {
        let ind = indent_of(text);
        if ind < indent || text.trim_start().starts_with("struct ") {
            break;
        }
        if ind != indent {
            return Err(error(
                no,
                format!("indented {ind} levels where {indent} were expected"),
            ));
        }
        *pos += 1;
        let mut f = parse_field(no, text.trim())?;
        f.children = parse_fields(lines, pos, indent + 1)?;
        if !f.children.is_empty() && f.ty.struct_name().is_none() {
            return Err(error(
                no,
                format!(
                    "`{}` has child fields but its type is not a struct or struct array",
                    f.name
                ),
            ));
        }
        out.push(f);
    }
    Ok(out)
}

/// `<name>: <type> @<range> [null@<range>] [tag=<n>@<range>] [=<default>]`
fn parse_field(no: usize, text: &str) -> Result<Field, ParseError> {
    let mut toks = text.split_whitespace();
    let name = toks
        .next()
        .unwrap_or_default()
        .trim_end_matches(':')
        .to_string();
    let ty = Ty::parse(
        toks.next()
            .ok_or_else(|| error(no, format!("field `{name}` without a type")))?,
    );
    let mut f = Field {
        name,
        ty,
        versions: Range::NONE,
        nullable: Range::NONE,
        tag: None,
        default: None,
        children: vec![],
    };
    for t in toks {
        if let Some(v) = t.strip_prefix("null@") {
            f.nullable = range(no, v)?;
        } else if let Some(v) = t.strip_prefix("tag=") {
            let (tag, r) = v
                .split_once('@')
                .ok_or_else(|| error(no, format!("expected tag=N@range, found `{t}`")))?;
            let tag = tag
                .parse()
                .map_err(|_| error(no, format!("bad tag `{tag}`")))?;
            f.tag = Some((tag, range(no, r)?));
        } else if let Some(v) = t.strip_prefix('@') {
            f.versions = range(no, v)?;
        } else if let Some(v) = t.strip_prefix('=') {
            f.default = Some(v.to_string());
        } else {
            return Err(error(no, format!("unknown token `{t}`")));
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "\
# a comment line, then the header
request DemoRequest key=99 versions=0-4 flexible=3+
  topics: [Topic] @0+
    name: string @0+
    partitions: [i32] @1+ null@2+

  rack_id: string @2+ null@2+ tag=0@3+ =null
  group: Group @4+

struct Group @4+
  id: string @4+ =\"g\"
";

    #[test]
    fn reads_header_fields_children_and_shared_structs() {
        let s = parse_spec(SPEC).unwrap();
        assert_eq!(
            (s.kind, s.name.as_str(), s.api_key),
            (Kind::Request, "DemoRequest", Some(99))
        );
        assert_eq!((s.versions.min, s.versions.max), (0, 4));
        assert_eq!(s.flexible, Range::parse("3+").unwrap());
        let names: Vec<&str> = s.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["topics", "rack_id", "group"]);
        let topics = &s.fields[0];
        assert_eq!(topics.ty, Ty::Array(Box::new(Ty::Struct("Topic".into()))));
        assert_eq!(topics.children.len(), 2);
        assert_eq!(topics.children[1].nullable, Range::parse("2+").unwrap());
        let rack = &s.fields[1];
        assert_eq!(rack.tag, Some((0, Range::parse("3+").unwrap())));
        assert_eq!(rack.default.as_deref(), Some("null"));
        assert_eq!(s.structs.len(), 1);
        assert_eq!(s.structs[0].name, "Group");
        assert_eq!(s.structs[0].fields[0].default.as_deref(), Some("\"g\""));
        let nested: Vec<String> = s.nested_structs().into_keys().collect();
        assert_eq!(nested, ["Group", "Topic"]);
    }

    #[test]
    fn errors_name_the_line_as_written() {
        let bad = "data D versions=0 flexible=none\n\n  a: i32 @0 sometimes\n";
        assert_eq!(parse_spec(bad).unwrap_err().line, 3);
        let bad = "data D versions=0 flexible=none\n  a: i32 @0\n      b: i32 @0\n";
        assert_eq!(parse_spec(bad).unwrap_err().line, 3);
        let bad = "data D versions=0 flexible=none\n  a: i32 @0\n    b: i32 @0\n";
        let e = parse_spec(bad).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("not a struct"), "{e}");
        assert_eq!(parse_spec("thing D versions=0").unwrap_err().line, 1);
        assert_eq!(parse_spec("data D versions=x").unwrap_err().line, 1);
        assert_eq!(parse_spec("# only a comment\n").unwrap_err().line, 0);
        let bad = "data D versions=0 flexible=none\n  a: i32 @0 tag=x@0\n";
        assert_eq!(parse_spec(bad).unwrap_err().line, 2);
        let bad = "data D versions=0 flexible=none\nstuff\n";
        assert_eq!(parse_spec(bad).unwrap_err().line, 2);
    }
}
