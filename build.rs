//! Generates the wire codec from `protocol-specs/`.
//!
//! Every `*.spec` file describes one message (a request, a response, or a `data` record
//! such as an `__consumer_offsets` key) in Strata's own line format, documented in
//! `protocol-specs/README.md`. For each one we emit a module with plain structs and
//! `decode` / `encode` for every version, handling flexible versions, compact types and
//! tagged fields (unknown tags are kept, so a message round-trips).
//!
//! Besides the codec it emits, for `messages/`, the per-API lookups the hand-written headers
//! need (`is_flexible_request`, `is_flexible_response`) and `validate_request` (decode a body
//! by API key and drop it; used by the robustness tests and the fuzz target), and, under
//! `cfg(test)` only, a deterministic `Sample` generator for every struct plus visitors over
//! every message (and over the pairs shared with the `kafka-protocol` crate) that drive the
//! round-trip and differential tests in `src/protocol/tests/`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug)]
struct Range {
    min: i16,
    max: i16,
}

impl Range {
    const NONE: Range = Range { min: 1, max: 0 };

    fn parse(s: &str) -> Range {
        if s == "none" {
            return Range::NONE;
        }
        if let Some(m) = s.strip_suffix('+') {
            return Range {
                min: m.parse().expect("range"),
                max: i16::MAX,
            };
        }
        if let Some((a, b)) = s.split_once('-') {
            return Range {
                min: a.parse().expect("range"),
                max: b.parse().expect("range"),
            };
        }
        let v = s.parse().expect("range");
        Range { min: v, max: v }
    }

    fn is_empty(&self) -> bool {
        self.min > self.max
    }

    /// A Rust boolean expression testing `version` against this range.
    fn test(&self) -> String {
        if self.is_empty() {
            "false".into()
        } else if self.max == i16::MAX {
            if self.min <= 0 {
                "true".into()
            } else {
                format!("version >= {}", self.min)
            }
        } else if self.min == self.max {
            format!("version == {}", self.min)
        } else {
            format!("(version >= {} && version <= {})", self.min, self.max)
        }
    }

    fn intersect(&self, o: &Range) -> Range {
        Range {
            min: self.min.max(o.min),
            max: self.max.min(o.max),
        }
    }
}

#[derive(Clone, Debug)]
enum Ty {
    Bool,
    I8,
    I16,
    U16,
    I32,
    I64,
    F64,
    Str,
    Bytes,
    Records,
    Uuid,
    Array(Box<Ty>),
    Struct(String),
}

impl Ty {
    fn parse(s: &str) -> Ty {
        if let Some(inner) = s.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
            return Ty::Array(Box::new(Ty::parse(inner)));
        }
        match s {
            "bool" => Ty::Bool,
            "i8" => Ty::I8,
            "i16" => Ty::I16,
            "u16" => Ty::U16,
            "i32" => Ty::I32,
            "i64" => Ty::I64,
            "f64" => Ty::F64,
            "string" => Ty::Str,
            "bytes" => Ty::Bytes,
            "records" => Ty::Records,
            "uuid" => Ty::Uuid,
            other => Ty::Struct(other.to_string()),
        }
    }

    fn rust(&self) -> String {
        match self {
            Ty::Bool => "bool".into(),
            Ty::I8 => "i8".into(),
            Ty::I16 => "i16".into(),
            Ty::U16 => "u16".into(),
            Ty::I32 => "i32".into(),
            Ty::I64 => "i64".into(),
            Ty::F64 => "f64".into(),
            Ty::Str => "String".into(),
            Ty::Bytes | Ty::Records => "Bytes".into(),
            Ty::Uuid => "Uuid".into(),
            Ty::Array(t) => format!("Vec<{}>", t.rust()),
            Ty::Struct(n) => n.clone(),
        }
    }

    fn is_struct(&self) -> bool {
        matches!(self, Ty::Struct(_))
    }
}

#[derive(Clone, Debug)]
struct Field {
    name: String,
    ty: Ty,
    versions: Range,
    nullable: Range,
    tag: Option<(u32, Range)>,
    default: Option<String>,
    children: Vec<Field>,
}

#[derive(Debug)]
struct Spec {
    kind: String,
    name: String,
    api_key: Option<i16>,
    versions: Range,
    flexible: Range,
    fields: Vec<Field>,
    structs: Vec<(String, Range, Vec<Field>)>,
}

fn indent_of(line: &str) -> usize {
    (line.len() - line.trim_start().len()) / 2
}

fn parse_field(line: &str) -> Field {
    let mut toks = line.split_whitespace();
    let name = toks
        .next()
        .expect("field name")
        .trim_end_matches(':')
        .to_string();
    let ty = Ty::parse(toks.next().expect("field type"));
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
            f.nullable = Range::parse(v);
        } else if let Some(v) = t.strip_prefix("tag=") {
            let (tag, r) = v.split_once('@').expect("tag=N@range");
            f.tag = Some((tag.parse().expect("tag"), Range::parse(r)));
        } else if let Some(v) = t.strip_prefix('@') {
            f.versions = Range::parse(v);
        } else if let Some(v) = t.strip_prefix('=') {
            f.default = Some(v.to_string());
        } else {
            panic!("unknown token {t} in {line}");
        }
    }
    f
}

/// Parses the lines at `indent` (and their children) into fields.
fn parse_fields(lines: &[&str], pos: &mut usize, indent: usize) -> Vec<Field> {
    let mut out = Vec::new();
    while *pos < lines.len() {
        let line = lines[*pos];
        let ind = indent_of(line);
        if ind < indent || line.trim_start().starts_with("struct ") {
            break;
        }
        assert_eq!(ind, indent, "bad indentation: {line}");
        *pos += 1;
        let mut f = parse_field(line.trim());
        f.children = parse_fields(lines, pos, indent + 1);
        out.push(f);
    }
    out
}

fn parse_spec(text: &str) -> Spec {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    let mut head = lines[0].split_whitespace();
    let kind = head.next().unwrap().to_string();
    let name = head.next().unwrap().to_string();
    let mut spec = Spec {
        kind,
        name,
        api_key: None,
        versions: Range::NONE,
        flexible: Range::NONE,
        fields: vec![],
        structs: vec![],
    };
    for t in head {
        let (k, v) = t.split_once('=').expect("key=value in header");
        match k {
            "key" => spec.api_key = Some(v.parse().unwrap()),
            "versions" => spec.versions = Range::parse(v),
            "flexible" => spec.flexible = Range::parse(v),
            _ => panic!("unknown header key {k}"),
        }
    }
    let mut pos = 1;
    spec.fields = parse_fields(&lines, &mut pos, 1);
    while pos < lines.len() {
        let mut t = lines[pos].split_whitespace();
        assert_eq!(
            t.next(),
            Some("struct"),
            "expected struct at {}",
            lines[pos]
        );
        let sname = t.next().unwrap().to_string();
        let r = Range::parse(t.next().unwrap_or("@0+").trim_start_matches('@'));
        pos += 1;
        let fields = parse_fields(&lines, &mut pos, 1);
        spec.structs.push((sname, r, fields));
    }
    spec
}

fn ident(name: &str) -> String {
    match name {
        "type" | "match" | "ref" | "move" | "static" | "self" | "struct" | "mod" | "use" | "in" => {
            format!("r#{name}")
        }
        _ => name.to_string(),
    }
}

fn snake(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = i + 1 < chars.len() && chars[i + 1].is_lowercase();
            if i > 0 && (prev_lower || (next_lower && chars[i - 1].is_uppercase())) {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(*c);
        }
    }
    out
}

struct Gen<'a> {
    spec: &'a Spec,
    /// Every struct of the message: name -> fields (nested and common ones).
    structs: BTreeMap<String, Vec<Field>>,
    out: String,
}

impl Field {
    fn nullable_anywhere(&self) -> bool {
        !self.nullable.is_empty()
    }

    fn rust_ty(&self) -> String {
        let t = self.ty.rust();
        if self.nullable_anywhere() {
            format!("Option<{t}>")
        } else {
            t
        }
    }

    fn default_expr(&self) -> String {
        let d = self.default.as_deref();
        // `None` is accepted as a spelling of `null` (one records spec uses it); anything else
        // would silently become `Some(Default::default())` and be written when Kafka omits it.
        if d == Some("null") || d == Some("None") {
            return "None".into();
        }
        let inner = match (&self.ty, d) {
            (Ty::Bool, Some(v)) => v.to_string(),
            (Ty::I8 | Ty::I16 | Ty::U16 | Ty::I32 | Ty::I64, Some(v)) => {
                if let Some(hex) = v.strip_prefix("0x") {
                    format!("0x{hex}")
                } else {
                    v.to_string()
                }
            }
            (Ty::F64, Some(v)) => format!("{v}f64"),
            (Ty::Str, Some(v)) => {
                let v = v.trim_matches('"');
                format!("String::from({v:?})")
            }
            _ => "Default::default()".into(),
        };
        if self.nullable_anywhere() {
            format!("Some({inner})")
        } else {
            inner
        }
    }
}

impl<'a> Gen<'a> {
    fn new(spec: &'a Spec) -> Self {
        let mut structs = BTreeMap::new();
        fn collect(fields: &[Field], structs: &mut BTreeMap<String, Vec<Field>>) {
            for f in fields {
                if !f.children.is_empty() {
                    let n = match &f.ty {
                        Ty::Array(t) => match &**t {
                            Ty::Struct(n) => n.clone(),
                            _ => panic!("children on a primitive array {}", f.name),
                        },
                        Ty::Struct(n) => n.clone(),
                        _ => panic!("children on primitive {}", f.name),
                    };
                    structs.insert(n, f.children.clone());
                    collect(&f.children, structs);
                }
            }
        }
        collect(&spec.fields, &mut structs);
        for (n, _, fields) in &spec.structs {
            structs.insert(n.clone(), fields.clone());
            collect(fields, &mut structs);
        }
        Gen {
            spec,
            structs,
            out: String::new(),
        }
    }

    fn flexible_test(&self) -> String {
        self.spec.flexible.test()
    }

    fn can_be_flexible(&self) -> bool {
        !self.spec.flexible.intersect(&self.spec.versions).is_empty()
    }

    fn emit_struct(&mut self, name: &str, fields: &[Field], top: bool) {
        let flex = self.can_be_flexible();
        let flexible_test = self.flexible_test();
        let s = self.spec;
        let o = &mut self.out;
        let _ = writeln!(o, "#[derive(Debug, Clone, PartialEq)]");
        let _ = writeln!(o, "pub struct {name} {{");
        for f in fields {
            let _ = writeln!(o, "    pub {}: {},", ident(&f.name), f.rust_ty());
        }
        if flex {
            let _ = writeln!(
                o,
                "    /// Tagged fields this version of Strata does not know, kept for round-trips."
            );
            let _ = writeln!(o, "    pub unknown_tagged_fields: Vec<RawTaggedField>,");
        }
        let _ = writeln!(o, "}}\n");

        let _ = writeln!(
            o,
            "impl Default for {name} {{\n    fn default() -> Self {{\n        Self {{"
        );
        for f in fields {
            let _ = writeln!(o, "            {}: {},", ident(&f.name), f.default_expr());
        }
        if flex {
            let _ = writeln!(o, "            unknown_tagged_fields: Vec::new(),");
        }
        let _ = writeln!(o, "        }}\n    }}\n}}\n");

        if top {
            let _ = writeln!(o, "impl {name} {{");
            if let Some(k) = s.api_key {
                let _ = writeln!(o, "    pub const API_KEY: i16 = {k};");
            }
            let _ = writeln!(o, "    pub const MIN_VERSION: i16 = {};", s.versions.min);
            let _ = writeln!(o, "    pub const MAX_VERSION: i16 = {};", s.versions.max);
            let _ = writeln!(
                o,
                "    /// Whether `version` uses compact types and tagged fields.\n    pub fn is_flexible(version: i16) -> bool {{ {} }}",
                s.flexible.test()
            );
            let _ = writeln!(o, "}}\n");
        }

        // decode
        let _ = writeln!(o, "impl Decode for {name} {{");
        let _ = writeln!(
            o,
            "    fn decode(buf: &mut Bytes, version: i16) -> Result<Self, DecodeError> {{"
        );
        let _ = writeln!(o, "        let flexible = {};", flexible_test);
        let _ = writeln!(o, "        let _ = flexible;");
        let _ = writeln!(o, "        let mut this = Self::default();");
        for f in fields {
            let regular = regular_range(f);
            if regular.is_empty() {
                continue;
            }
            let _ = writeln!(o, "        if {} {{", regular.test());
            let _ = writeln!(
                o,
                "            this.{} = {};",
                ident(&f.name),
                decode_expr(f, "flexible")
            );
            let _ = writeln!(o, "        }}");
        }
        if flex {
            let _ = writeln!(o, "        if flexible {{");
            let _ = writeln!(o, "            let count = read_uvarint(buf)?;");
            let _ = writeln!(o, "            for _ in 0..count {{");
            let _ = writeln!(o, "                let tag = read_uvarint(buf)?;");
            let _ = writeln!(o, "                let size = read_uvarint(buf)? as usize;");
            let _ = writeln!(o, "                let mut data = take_bytes(buf, size)?;");
            let _ = writeln!(o, "                let _ = &mut data;");
            let _ = writeln!(o, "                match tag {{");
            for f in fields {
                if let Some((tag, tr)) = f.tag {
                    let tr = tr.intersect(&f.versions);
                    let _ = writeln!(o, "                    {tag} if {} => {{", tr.test());
                    let _ = writeln!(
                        o,
                        "                        this.{} = {{ let buf = &mut data; {} }};",
                        ident(&f.name),
                        decode_expr(f, "true")
                    );
                    let _ = writeln!(o, "                    }}");
                }
            }
            let _ = writeln!(
                o,
                "                    _ => this.unknown_tagged_fields.push(RawTaggedField {{ tag, data }}),"
            );
            let _ = writeln!(o, "                }}");
            let _ = writeln!(o, "            }}");
            let _ = writeln!(o, "        }}");
        }
        let _ = writeln!(o, "        Ok(this)");
        let _ = writeln!(o, "    }}");
        let _ = writeln!(o, "}}\n");

        emit_sample(
            o,
            name,
            fields,
            flex,
            &flexible_test,
            top && s.kind == "data",
        );

        // encode
        let _ = writeln!(o, "impl Encode for {name} {{");
        let _ = writeln!(
            o,
            "    fn encode(&self, buf: &mut BytesMut, version: i16) {{"
        );
        let _ = writeln!(o, "        let flexible = {};", flexible_test);
        let _ = writeln!(o, "        let _ = flexible;");
        for f in fields {
            let regular = regular_range(f);
            if regular.is_empty() {
                continue;
            }
            let _ = writeln!(o, "        if {} {{", regular.test());
            let _ = writeln!(
                o,
                "            {}",
                encode_stmt(f, &format!("self.{}", ident(&f.name)), "flexible")
            );
            let _ = writeln!(o, "        }}");
        }
        if flex {
            let _ = writeln!(o, "        if flexible {{");
            let _ = writeln!(
                o,
                "            let mut tagged: Vec<(u32, BytesMut)> = Vec::new();"
            );
            for f in fields {
                if let Some((tag, tr)) = f.tag {
                    let tr = tr.intersect(&f.versions);
                    let _ = writeln!(
                        o,
                        "            if {} && self.{} != {} {{",
                        tr.test(),
                        ident(&f.name),
                        typed_default(f)
                    );
                    let _ = writeln!(o, "                let mut b = BytesMut::new();");
                    let _ = writeln!(
                        o,
                        "                {{ let buf = &mut b; {} }}",
                        encode_stmt(f, &format!("self.{}", ident(&f.name)), "true")
                    );
                    let _ = writeln!(o, "                tagged.push(({tag}, b));");
                    let _ = writeln!(o, "            }}");
                }
            }
            let _ = writeln!(
                o,
                "            write_tagged_fields(buf, tagged, &self.unknown_tagged_fields);"
            );
            let _ = writeln!(o, "        }}");
        }
        let _ = writeln!(o, "    }}");
        let _ = writeln!(o, "}}\n");
    }

    fn run(mut self) -> String {
        let structs: Vec<(String, Vec<Field>)> = self
            .structs
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let top_name = self.spec.name.clone();
        let top_fields = self.spec.fields.clone();
        self.emit_struct(&top_name, &top_fields, true);
        for (n, f) in structs {
            self.emit_struct(&n, &f, false);
        }
        self.out
    }
}

/// Versions in which a field is written in the main body (not as a tagged field).
fn regular_range(f: &Field) -> Range {
    match f.tag {
        // A field that is tagged in some versions is positional only below them.
        Some((_, tr)) => {
            if tr.min <= f.versions.min {
                Range::NONE
            } else {
                Range {
                    min: f.versions.min,
                    max: f.versions.max.min(tr.min - 1),
                }
            }
        }
        None => f.versions,
    }
}

/// Versions in which a field is carried as a tagged field.
fn tagged_range(f: &Field) -> Range {
    match f.tag {
        Some((_, tr)) => tr.intersect(&f.versions),
        None => Range::NONE,
    }
}

/// Emits the test-only `Sample` impl of one struct: random values for exactly the fields the
/// version carries, `None` only where the version allows null, tagged fields left at their
/// default half of the time, and sometimes a few unknown tagged fields.
fn emit_sample(
    o: &mut String,
    name: &str,
    fields: &[Field],
    flex: bool,
    flexible_test: &str,
    top_data: bool,
) {
    let _ = writeln!(o, "#[cfg(test)]");
    let _ = writeln!(
        o,
        "impl crate::protocol::tests::support::Sample for {name} {{"
    );
    let _ = writeln!(
        o,
        "    fn sample(rng: &mut crate::protocol::tests::support::TestRng, version: i16) -> Self {{"
    );
    let _ = writeln!(o, "        #[allow(unused_imports)]\n        use crate::protocol::tests::support::Sample as _;");
    let _ = writeln!(o, "        let flexible = {flexible_test};");
    let _ = writeln!(o, "        let _ = flexible;");
    let _ = writeln!(o, "        let mut this = Self::default();");
    for f in fields {
        let regular = regular_range(f);
        let tagged = tagged_range(f);
        if regular.is_empty() && tagged.is_empty() {
            continue;
        }
        let value = if top_data && f.name == "version" && matches!(f.ty, Ty::I16) {
            // The `version` field of KRaft control records (LeaderChangeMessage, VotersRecord,
            // ...) carries the schema version itself; readers, kafka-protocol among them, rely
            // on it, so a random value would not be a valid message.
            "version".to_string()
        } else {
            sample_value(&f.ty)
        };
        let expr = if f.nullable_anywhere() {
            format!(
                "if {} && rng.below(4) == 0 {{ None }} else {{ Some({value}) }}",
                f.nullable.test()
            )
        } else {
            value
        };
        let _ = writeln!(o, "        if {} || {} {{", regular.test(), tagged.test());
        let _ = writeln!(
            o,
            "            if !({} && rng.below(2) == 0) {{",
            tagged.test()
        );
        let _ = writeln!(o, "                this.{} = {expr};", ident(&f.name));
        let _ = writeln!(o, "            }}");
        let _ = writeln!(o, "        }}");
    }
    if flex {
        let _ = writeln!(o, "        if flexible && rng.below(8) == 0 {{");
        let _ = writeln!(
            o,
            "            this.unknown_tagged_fields = rng.unknown_tagged_fields();"
        );
        let _ = writeln!(o, "        }}");
    }
    let _ = writeln!(o, "        this");
    let _ = writeln!(o, "    }}");
    let _ = writeln!(o, "}}\n");
}

/// Expression producing one random value of `ty` (uses `rng` and `version`).
fn sample_value(ty: &Ty) -> String {
    match ty {
        Ty::Bool => "rng.bool()".into(),
        Ty::I8 => "(rng.next_u64() as i8)".into(),
        Ty::I16 => "(rng.next_u64() as i16)".into(),
        Ty::U16 => "(rng.next_u64() as u16)".into(),
        Ty::I32 => "(rng.next_u64() as i32)".into(),
        Ty::I64 => "(rng.next_u64() as i64)".into(),
        Ty::F64 => "rng.f64()".into(),
        Ty::Str => "rng.string()".into(),
        Ty::Bytes | Ty::Records => "rng.bytes()".into(),
        Ty::Uuid => "rng.uuid()".into(),
        Ty::Array(inner) => format!(
            "{{ let n = rng.below(4); let mut v = Vec::with_capacity(n); for _ in 0..n {{ v.push({}); }} v }}",
            sample_value(inner)
        ),
        Ty::Struct(n) => format!("<{n}>::sample(rng, version)"),
    }
}

fn typed_default(f: &Field) -> String {
    let d = f.default_expr();
    if d == "Default::default()" {
        format!("<{}>::default()", f.rust_ty())
    } else {
        d
    }
}

/// Expression decoding one value of type `ty` from `buf`.
fn decode_value(ty: &Ty, nullable: bool, flex: &str) -> String {
    match ty {
        Ty::Bool => "read_bool(buf)?".into(),
        Ty::I8 => "read_i8(buf)?".into(),
        Ty::I16 => "read_i16(buf)?".into(),
        Ty::U16 => "read_u16(buf)?".into(),
        Ty::I32 => "read_i32(buf)?".into(),
        Ty::I64 => "read_i64(buf)?".into(),
        Ty::F64 => "read_f64(buf)?".into(),
        Ty::Uuid => "read_uuid(buf)?".into(),
        Ty::Str => {
            if nullable {
                format!("read_nullable_string(buf, {flex})?")
            } else {
                format!("read_string(buf, {flex})?")
            }
        }
        Ty::Bytes | Ty::Records => {
            if nullable {
                format!("read_nullable_bytes(buf, {flex})?")
            } else {
                format!("read_bytes(buf, {flex})?")
            }
        }
        Ty::Array(inner) => {
            let elem = decode_value(inner, false, flex);
            let call = format!("read_array(buf, {flex}, |buf| Ok({elem}))?");
            if nullable {
                call.replace("read_array(", "read_nullable_array(")
            } else {
                call
            }
        }
        Ty::Struct(n) => {
            if nullable {
                format!("read_nullable_struct::<{n}>(buf, version)?")
            } else {
                format!("{n}::decode(buf, version)?")
            }
        }
    }
}

fn decode_expr(f: &Field, flex: &str) -> String {
    let nullable_here = !f.nullable.is_empty();
    if f.nullable_anywhere() && !f.nullable.is_empty() {
        // Nullable in some versions: decode as nullable only there.
        let n = decode_value(&f.ty, true, flex);
        let nn = decode_value(&f.ty, false, flex);
        format!("if {} {{ {n} }} else {{ Some({nn}) }}", f.nullable.test())
    } else {
        let _ = nullable_here;
        decode_value(&f.ty, false, flex)
    }
}

fn encode_value(ty: &Ty, v: &str, nullable: bool, flex: &str) -> String {
    match ty {
        Ty::Bool => format!("write_bool(buf, {v});"),
        Ty::I8 => format!("buf.put_i8({v});"),
        Ty::I16 => format!("buf.put_i16({v});"),
        Ty::U16 => format!("buf.put_u16({v});"),
        Ty::I32 => format!("buf.put_i32({v});"),
        Ty::I64 => format!("buf.put_i64({v});"),
        Ty::F64 => format!("buf.put_f64({v});"),
        Ty::Uuid => format!("buf.put_slice({v}.as_bytes());"),
        Ty::Str => {
            if nullable {
                format!("write_nullable_string(buf, {v}.as_deref(), {flex});")
            } else {
                format!("write_string(buf, &{v}, {flex});")
            }
        }
        Ty::Bytes | Ty::Records => {
            if nullable {
                format!("write_nullable_bytes(buf, {v}.as_deref(), {flex});")
            } else {
                format!("write_bytes(buf, &{v}, {flex});")
            }
        }
        Ty::Array(inner) => {
            let elem = encode_value(inner, "(*e)", false, flex);
            let elem = if inner.is_struct() {
                elem.replace("(*e)", "e")
            } else {
                elem
            };
            if nullable {
                format!(
                    "match &{v} {{ None => write_array_len(buf, -1, {flex}), Some(a) => {{ write_array_len(buf, a.len() as i32, {flex}); for e in a.iter() {{ {elem} }} }} }}"
                )
            } else {
                format!(
                    "{{ write_array_len(buf, {v}.len() as i32, {flex}); for e in {v}.iter() {{ {elem} }} }}"
                )
            }
        }
        Ty::Struct(_) => {
            if nullable {
                format!("match &{v} {{ None => buf.put_i8(-1), Some(s) => {{ buf.put_i8(1); s.encode(buf, version); }} }}")
            } else {
                format!("{v}.encode(buf, version);")
            }
        }
    }
}

fn encode_stmt(f: &Field, v: &str, flex: &str) -> String {
    if f.nullable_anywhere() {
        let n = encode_value(&f.ty, v, true, flex);
        // Outside its nullable versions a null is written as the empty value.
        let nn = encode_value(&f.ty, "inner", false, flex);
        let empty = match f.ty {
            Ty::Struct(_) => format!("{}::default()", f.ty.rust()),
            _ => "Default::default()".into(),
        };
        format!(
            "if {} {{ {n} }} else {{ let empty: {} = {empty}; let inner = {v}.as_ref().unwrap_or(&empty); let inner = inner.clone(); {nn} }}",
            f.nullable.test(),
            f.ty.rust(),
        )
    } else {
        encode_value(&f.ty, v, false, flex)
    }
}

fn module_name(file: &Path) -> String {
    file.file_stem().unwrap().to_string_lossy().to_string()
}

/// Messages `kafka-protocol` knows under another name: (ours, its module, its type). Key 74
/// was ListClientMetricsResources (v0) before KIP-1142 renamed it.
const KAFKA_PROTOCOL_RENAMED: &[(&str, &str, &str)] = &[
    (
        "list_config_resources_request",
        "list_client_metrics_resources_request",
        "ListClientMetricsResourcesRequest",
    ),
    (
        "list_config_resources_response",
        "list_client_metrics_resources_response",
        "ListClientMetricsResourcesResponse",
    ),
];

/// `kafka-protocol`'s module and type for one of our messages.
fn kafka_protocol_name(module: &str, name: &str) -> (String, String) {
    KAFKA_PROTOCOL_RENAMED
        .iter()
        .find(|(ours, _, _)| *ours == module)
        .map(|(_, m, n)| (m.to_string(), n.to_string()))
        .unwrap_or_else(|| (module.to_string(), name.to_string()))
}

/// Messages the `kafka-protocol` 0.15 crate (Kafka 4.0 schemas) does not define: the share-group
/// RPCs of KIP-932 (keys 76-79, 83-87 and 90-92) were still unstable in 4.0 and left out of its
/// generated set, so the differential test has nothing to compare them with. `main` checks
/// that every entry names a spec, so a renamed or removed spec cannot leave a stale one.
const NOT_IN_KAFKA_PROTOCOL: &[&str] = &[
    "alter_share_group_offsets_request",
    "alter_share_group_offsets_response",
    "delete_share_group_offsets_request",
    "delete_share_group_offsets_response",
    "delete_share_group_state_request",
    "delete_share_group_state_response",
    "describe_share_group_offsets_request",
    "describe_share_group_offsets_response",
    "initialize_share_group_state_request",
    "initialize_share_group_state_response",
    "read_share_group_state_request",
    "read_share_group_state_response",
    "read_share_group_state_summary_request",
    "read_share_group_state_summary_response",
    "share_acknowledge_request",
    "share_acknowledge_response",
    "share_fetch_request",
    "share_fetch_response",
    "share_group_describe_request",
    "share_group_describe_response",
    "share_group_heartbeat_request",
    "share_group_heartbeat_response",
    "write_share_group_state_request",
    "write_share_group_state_response",
];

/// The width of a field that always takes the same number of bytes; None for variable ones.
fn fixed_width(ty: &Ty) -> Option<usize> {
    match ty {
        Ty::Bool | Ty::I8 => Some(1),
        Ty::I16 | Ty::U16 => Some(2),
        Ty::I32 => Some(4),
        Ty::I64 | Ty::F64 => Some(8),
        Ty::Uuid => Some(16),
        _ => None,
    }
}

/// Emits `response_throttle_time_offset`: where a response body holds its top-level
/// `throttle_time_ms`, for the versions that have one and where only fixed-width fields come
/// before it (so the quota code can set it in an encoded response without knowing its type).
fn emit_throttle_offsets(out: &mut String, specs: &[(String, Spec)]) {
    let _ = writeln!(
        out,
        "/// The byte offset of `throttle_time_ms` in the body of response `api_key` at `version`,\n/// when the version has the field and only fixed-width fields precede it."
    );
    let _ = writeln!(
        out,
        "pub fn response_throttle_time_offset(api_key: i16, version: i16) -> Option<usize> {{\n    match api_key {{"
    );
    for (_, spec) in specs.iter().filter(|(_, s)| s.kind == "response") {
        let Some(k) = spec.api_key else { continue };
        if spec.versions.is_empty() {
            continue;
        }
        let mut arms: Vec<(i16, i16, usize)> = Vec::new();
        for v in spec.versions.min..=spec.versions.max {
            let mut offset = Some(0usize);
            let mut found = None;
            for f in &spec.fields {
                let present = f.tag.is_none() && f.versions.min <= v && v <= f.versions.max;
                if !present {
                    continue;
                }
                if f.name == "throttle_time_ms" {
                    found = offset;
                    break;
                }
                offset = offset.and_then(|o| fixed_width(&f.ty).map(|w| o + w));
            }
            if let Some(o) = found {
                match arms.last_mut() {
                    Some(last) if last.1 + 1 == v && last.2 == o => last.1 = v,
                    _ => arms.push((v, v, o)),
                }
            }
        }
        if arms.is_empty() {
            continue;
        }
        let _ = writeln!(out, "        {k} => match version {{");
        for (a, b, o) in arms {
            let _ = writeln!(out, "            {a}..={b} => Some({o}),");
        }
        let _ = writeln!(out, "            _ => None,\n        }},");
    }
    let _ = writeln!(out, "        _ => None,\n    }}\n}}\n");
}

/// Emits the per-API lookups and the test-only visitors for one folder of specs.
fn emit_index(out: &mut String, sub: &str, specs: &[(String, Spec)]) {
    if sub == "messages" {
        for kind in ["request", "response"] {
            let _ = writeln!(
                out,
                "/// Whether `version` of the {kind} with `api_key` is flexible (compact types, tagged\n/// fields); `None` for an API key Strata has no {kind} spec for."
            );
            let _ = writeln!(
                out,
                "pub fn is_flexible_{kind}(api_key: i16, version: i16) -> Option<bool> {{\n    match api_key {{"
            );
            for (m, spec) in specs.iter().filter(|(_, s)| s.kind == kind) {
                if let Some(k) = spec.api_key {
                    let _ = writeln!(
                        out,
                        "        {k} => Some({m}::{}::is_flexible(version)),",
                        spec.name
                    );
                }
            }
            let _ = writeln!(out, "        _ => None,\n    }}\n}}\n");
        }
        emit_throttle_offsets(out, specs);
        let _ = writeln!(
            out,
            "/// Decodes the body of request `api_key` at `version` and drops it, requiring that it\n/// consumes `buf` exactly. Used by the robustness tests and the fuzz target; the broker's\n/// dispatch decodes into the typed messages directly."
        );
        let _ = writeln!(
            out,
            "pub fn validate_request(api_key: i16, version: i16, buf: &mut Bytes) -> Result<(), DecodeError> {{\n    match api_key {{"
        );
        for (m, spec) in specs.iter().filter(|(_, s)| s.kind == "request") {
            if let Some(k) = spec.api_key {
                let t = format!("{m}::{}", spec.name);
                let _ = writeln!(
                    out,
                    "        {k} => {{\n            if version < {t}::MIN_VERSION || version > {t}::MAX_VERSION {{\n                return Err(DecodeError::UnsupportedVersion {{ api_key, version }});\n            }}\n            {t}::decode(buf, version)?;\n        }}"
                );
            }
        }
        let _ = writeln!(
            out,
            "        _ => return Err(DecodeError::UnknownApiKey(api_key)),\n    }}"
        );
        let _ = writeln!(
            out,
            "    if buf.is_empty() {{ Ok(()) }} else {{ Err(DecodeError::TrailingBytes(buf.len())) }}\n}}\n"
        );
    }

    // Test-only visitors: every top-level message, and the pairs shared with kafka-protocol.
    let _ = writeln!(
        out,
        "/// Calls `v.visit::<T>(..)` for every top-level message of this folder."
    );
    let _ = writeln!(out, "#[cfg(test)]");
    let _ = writeln!(
        out,
        "pub(crate) fn visit_all(v: &mut impl crate::protocol::tests::support::Visitor) {{"
    );
    for (m, spec) in specs {
        if spec.versions.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "    v.visit::<{m}::{}>({:?}, {:?}, {}, {}, {});",
            spec.name,
            spec.name,
            spec.kind,
            spec.api_key.unwrap_or(-1),
            spec.versions.min,
            spec.versions.max
        );
    }
    let _ = writeln!(out, "}}\n");
    if sub == "messages" {
        let _ = writeln!(
            out,
            "/// Calls `v.visit::<Ours, Theirs>(..)` for every message `kafka-protocol` also defines."
        );
        let _ = writeln!(out, "#[cfg(test)]");
        let _ = writeln!(
            out,
            "pub(crate) fn visit_kafka_protocol_pairs(v: &mut impl crate::protocol::tests::support::PairVisitor) {{"
        );
        for (m, spec) in specs {
            if spec.versions.is_empty() || NOT_IN_KAFKA_PROTOCOL.contains(&m.as_str()) {
                continue;
            }
            let (km, kn) = kafka_protocol_name(m, &spec.name);
            let _ = writeln!(
                out,
                "    v.visit::<{m}::{n}, kafka_protocol::messages::{km}::{kn}>({n:?}, {:?}, {}, {});",
                spec.kind,
                spec.versions.min,
                spec.versions.max,
                n = spec.name,
            );
        }
        let _ = writeln!(out, "}}\n");

        let _ = writeln!(
            out,
            "/// Calls `v.visit::<Request, Response>(api_key, min, max)` with `kafka-protocol`'s types\n/// for every API both sides define (header-version checks)."
        );
        let _ = writeln!(out, "#[cfg(test)]");
        let _ = writeln!(
            out,
            "pub(crate) fn visit_kafka_protocol_apis(v: &mut impl crate::protocol::tests::support::ApiVisitor) {{"
        );
        for (m, spec) in specs.iter().filter(|(_, s)| s.kind == "request") {
            let resp_m = m.replace("_request", "_response");
            let resp = specs.iter().find(|(rm, _)| *rm == resp_m);
            let (Some(k), Some((_, resp))) = (spec.api_key, resp) else {
                continue;
            };
            if spec.versions.is_empty() || NOT_IN_KAFKA_PROTOCOL.contains(&m.as_str()) {
                continue;
            }
            let (km, kn) = kafka_protocol_name(m, &spec.name);
            let (krm, krn) = kafka_protocol_name(&resp_m, &resp.name);
            let _ = writeln!(
                out,
                "    v.visit::<kafka_protocol::messages::{km}::{kn}, kafka_protocol::messages::{krm}::{krn}>({k}, {}, {});",
                spec.versions.min, spec.versions.max
            );
        }
        let _ = writeln!(out, "}}\n");
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=build.rs");
    for sub in ["messages", "records"] {
        let dir = root.join("protocol-specs").join(sub);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<PathBuf> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().map(|e| e == "spec").unwrap_or(false))
            .collect();
        files.sort();
        let mut out = String::new();
        let mut index = String::new();
        let mut specs = Vec::new();
        for file in &files {
            println!("cargo:rerun-if-changed={}", file.display());
            let spec = parse_spec(&fs::read_to_string(file).unwrap());
            let m = module_name(file);
            let _ = writeln!(out, "pub mod {m} {{");
            let _ = writeln!(
                out,
                "//! `{}` ({}{}), versions {}, generated from `protocol-specs/{sub}/{m}.spec`.",
                spec.name,
                spec.kind,
                spec.api_key
                    .map(|k| format!(", API key {k}"))
                    .unwrap_or_default(),
                if spec.versions.is_empty() {
                    "none".to_string()
                } else {
                    format!("{}-{}", spec.versions.min, spec.versions.max)
                },
            );
            let _ = writeln!(
                out,
                "#![allow(clippy::all, unused_mut, unused_variables, unused_parens)]"
            );
            let _ = writeln!(out, "use crate::protocol::codec::*;");
            out.push_str(&Gen::new(&spec).run());
            let _ = writeln!(out, "}}");
            let _ = writeln!(
                index,
                "    ({:?}, {:?}, {}, {}, {}, {}),",
                spec.name,
                spec.kind,
                spec.api_key.unwrap_or(-1),
                spec.versions.min,
                if spec.versions.is_empty() {
                    -1
                } else {
                    spec.versions.max
                },
                snake(&spec.name) == m
            );
            specs.push((m, spec));
        }
        let _ = writeln!(
            out,
            "/// (name, kind, api key, min version, max version, file named after message) of every spec.\npub const SPECS: &[(&str, &str, i16, i16, i16, bool)] = &[\n{index}];"
        );
        if sub == "messages" {
            let _ = writeln!(
                out,
                "use crate::protocol::codec::{{Bytes, Decode, DecodeError}};"
            );
        }
        if sub == "messages" {
            for m in NOT_IN_KAFKA_PROTOCOL {
                assert!(
                    specs.iter().any(|(ours, _)| ours == m),
                    "NOT_IN_KAFKA_PROTOCOL names {m}, which has no spec in protocol-specs/messages"
                );
            }
        }
        emit_index(&mut out, sub, &specs);
        fs::write(out_dir.join(format!("{sub}.rs")), out).unwrap();
    }
}
