//! A reader for Java `.properties` text, as `java.util.Properties.load` parses it (Kafka reads
//! `server.properties` with it): `#`/`!` comment lines, `key=value`, `key: value` or
//! `key value`, backslash line continuations (leading whitespace of the next line dropped),
//! escapes `\t \n \r \f \uXXXX` and `\x` = `x`. A later duplicate key replaces the earlier.

use std::collections::BTreeMap;

use super::ConfigError;

/// Parses properties text into key/value pairs, in key order.
pub fn parse_properties(text: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut out = BTreeMap::new();
    for (line_no, logical) in logical_lines(text) {
        let (key, value) = split_key_value(&logical);
        let key = unescape(key, line_no)?;
        let value = unescape(value, line_no)?;
        out.insert(key, value);
    }
    Ok(out)
}

/// Natural lines end at `\n`, `\r` or `\r\n`.
fn natural_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..i]);
                start = i + 1;
            }
            b'\r' => {
                lines.push(&text[start..i]);
                if i + 1 < bytes.len() && bytes[i + 1] == b'\n' {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

fn is_ws(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\x0c'
}

/// True when the line ends with an odd number of backslashes (a continuation).
fn continues(line: &str) -> bool {
    line.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1
}

/// Joins continuations and drops blank and comment lines; each item carries the 1-based
/// number of its first natural line.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let lines = natural_lines(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line_no = i + 1;
        let first = lines[i].trim_start_matches(is_ws);
        i += 1;
        if first.is_empty() || first.starts_with('#') || first.starts_with('!') {
            continue;
        }
        let mut logical = String::from(first);
        while continues(&logical) {
            logical.pop();
            if i >= lines.len() {
                break;
            }
            logical.push_str(lines[i].trim_start_matches(is_ws));
            i += 1;
        }
        out.push((line_no, logical));
    }
    out
}

/// Splits at the first unescaped `=`, `:` or whitespace; then skips whitespace and at most one
/// `=`/`:` separator. Returns both parts still escaped.
fn split_key_value(line: &str) -> (&str, &str) {
    let mut escaped = false;
    let mut key_end = line.len();
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
        } else if c == '=' || c == ':' || is_ws(c) {
            key_end = i;
            break;
        }
    }
    let key = &line[..key_end];
    let mut rest = line[key_end..].trim_start_matches(is_ws);
    if let Some(r) = rest.strip_prefix('=').or_else(|| rest.strip_prefix(':')) {
        rest = r.trim_start_matches(is_ws);
    }
    (key, rest)
}

fn unescape(s: &str, line: usize) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            None => {}
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let bad = || ConfigError::Properties {
                    line,
                    reason: format!("malformed \\uxxxx encoding: \\u{hex}"),
                };
                if hex.len() != 4 {
                    return Err(bad());
                }
                let code = u32::from_str_radix(&hex, 16).map_err(|_| bad())?;
                // Java strings are UTF-16; a lone surrogate has no char, keep a replacement.
                out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            Some(other) => out.push(other),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> BTreeMap<String, String> {
        parse_properties(text).unwrap()
    }

    #[test]
    fn separators_comments_and_blanks() {
        let m = p("# comment\n! also\n\n   \na=1\nb: 2\nc 3\nd   =   4  \n  e=\nf\n");
        assert_eq!(m["a"], "1");
        assert_eq!(m["b"], "2");
        assert_eq!(m["c"], "3");
        assert_eq!(m["d"], "4  "); // trailing whitespace is part of the value, as in Java
        assert_eq!(m["e"], "");
        assert_eq!(m["f"], "");
        assert_eq!(m.len(), 6);
    }

    #[test]
    fn continuations_and_line_endings() {
        let m = p("list=a,\\\n    b,\\\r\n\tc\r x=1\\\\\ny=2\\");
        assert_eq!(m["list"], "a,b,c");
        assert_eq!(m["x"], "1\\"); // an even number of backslashes does not continue
        assert_eq!(m["y"], "2");
    }

    #[test]
    fn escapes_and_duplicates() {
        let m = p("k\\=ey=v\\u0041\\t\\zz\nk\\:2 = x\\ny\nk\\ 3=#not comment\ndup=1\ndup=2");
        assert_eq!(m["k=ey"], "vA\tzz");
        assert_eq!(m["k:2"], "x\ny");
        assert_eq!(m["k 3"], "#not comment");
        assert_eq!(m["dup"], "2");
    }

    #[test]
    fn bad_unicode_escape_names_the_line() {
        let err = parse_properties("a=1\nb=\\u12G4").unwrap_err();
        assert!(matches!(err, ConfigError::Properties { line: 2, .. }));
        assert!(parse_properties("b=\\u12").is_err());
    }

    #[test]
    fn comment_marker_inside_continuation_is_data() {
        let m = p("a=1,\\\n#2\n");
        assert_eq!(m["a"], "1,#2");
    }
}
