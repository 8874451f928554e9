//! The generated code of small specs, checked where it carries the wire rules: flexible
//! versions, tagged fields (positional below their tagged versions), nullable fields, defaults.

use super::message;
use crate::parse::parse_spec;

const FLEXIBLE: &str = "\
request DemoRequest key=99 versions=0-4 flexible=3+
  topics: [Topic] @0+
    name: string @0+
    partitions: [i32] @0+
  rack_id: string @2+ null@2+ tag=0@3+ =null
  timeout_ms: i32 @1+ =30000
  group: Group @4+ null@4+
struct Group @4+
  id: string @4+
";

fn generate(spec: &str) -> String {
    let mut out = String::new();
    message(&mut out, &parse_spec(spec).unwrap()).unwrap();
    out
}

fn assert_has(code: &str, part: &str) {
    assert!(code.contains(part), "missing:\n{part}\nin:\n{code}");
}

/// A cheap stand-in for compiling it: every brace and parenthesis closes.
fn assert_balanced(code: &str) {
    let mut stack = Vec::new();
    for c in code.chars() {
        match c {
            '{' | '(' => stack.push(c),
            '}' => assert_eq!(stack.pop(), Some('{'), "unbalanced in:\n{code}"),
            ')' => assert_eq!(stack.pop(), Some('('), "unbalanced in:\n{code}"),
            _ => {}
        }
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
}

#[test]
fn the_message_comes_first_then_its_structs_by_name() {
    let code = generate(FLEXIBLE);
    assert_balanced(&code);
    let at = |s: &str| code.find(s).unwrap_or_else(|| panic!("no {s}"));
    assert!(at("pub struct DemoRequest {") < at("pub struct Group {"));
    assert!(at("pub struct Group {") < at("pub struct Topic {"));
    assert_has(&code, "    pub const API_KEY: i16 = 99;\n    pub const MIN_VERSION: i16 = 0;\n    pub const MAX_VERSION: i16 = 4;\n");
}

#[test]
fn flexible_versions_switch_the_encoding_and_keep_unknown_tags() {
    let code = generate(FLEXIBLE);
    assert_has(
        &code,
        "pub fn is_flexible(version: i16) -> bool { version >= 3 }",
    );
    assert_has(&code, "        let flexible = version >= 3;\n");
    // Lengths follow `flexible` (compact in flexible versions).
    assert_has(
        &code,
        "this.topics = read_array(buf, flexible, |buf| Ok(Topic::decode(buf, version)?))?;",
    );
    assert_has(&code, "{ write_array_len(buf, self.partitions.len() as i32, flexible); for e in self.partitions.iter() { buf.put_i32((*e)); } }");
    // Every struct of a message with flexible versions keeps the tags it does not know.
    assert_eq!(
        code.matches("pub unknown_tagged_fields: Vec<RawTaggedField>,")
            .count(),
        3
    );
    assert_has(
        &code,
        "_ => this.unknown_tagged_fields.push(RawTaggedField { tag, data }),",
    );
    assert_has(
        &code,
        "write_tagged_fields(buf, tagged, &self.unknown_tagged_fields);",
    );
}

#[test]
fn a_spec_without_flexible_versions_has_no_tag_section() {
    let code =
        generate("data Plain versions=0-1 flexible=none\n  a: i32 @0+\n  b: string @1+ =\"x\"\n");
    assert_balanced(&code);
    assert_has(&code, "pub fn is_flexible(version: i16) -> bool { false }");
    assert!(!code.contains("unknown_tagged_fields"), "{code}");
    assert!(!code.contains("read_uvarint"), "{code}");
    assert!(!code.contains("API_KEY"), "{code}");
    assert_has(&code, "            b: String::from(\"x\"),\n");
    assert_has(
        &code,
        "        if version >= 1 {\n            this.b = read_string(buf, flexible)?;\n        }\n",
    );
}

#[test]
fn a_field_tagged_from_some_version_is_positional_below_it() {
    let code = generate(FLEXIBLE);
    // Positional in v2 only, nullable there.
    assert_has(&code, "        if version == 2 {\n            this.rack_id = if version >= 2 { read_nullable_string(buf, flexible)? } else { Some(read_string(buf, flexible)?) };\n        }\n");
    // A tagged field's value is always compact.
    assert_has(&code, "                    0 if version >= 3 => {\n                        this.rack_id = { let buf = &mut data; if version >= 2 { read_nullable_string(buf, true)? } else { Some(read_string(buf, true)?) } };\n");
    // Written only when it differs from its default.
    assert_has(&code, "            if version >= 3 && self.rack_id != None {\n                let mut b = BytesMut::new();\n");
    assert_has(&code, "                tagged.push((0, b));\n");
}

#[test]
fn nullable_fields_are_null_on_the_wire_only_in_their_nullable_versions() {
    let code = generate(FLEXIBLE);
    assert_has(&code, "    pub rack_id: Option<String>,\n");
    assert_has(&code, "            rack_id: None,\n");
    assert_has(&code, "    pub group: Option<Group>,\n");
    assert_has(&code, "read_nullable_struct::<Group>(buf, version)?");
    assert_has(&code, "match &self.group { None => buf.put_i8(-1), Some(s) => { buf.put_i8(1); s.encode(buf, version); } }");
    // Outside the nullable versions a null is written as the empty value.
    let spec = "data N versions=0-2 flexible=none\n  s: string @0+ null@1+\n";
    let code = generate(spec);
    assert_has(&code, "if version >= 1 { write_nullable_string(buf, self.s.as_deref(), flexible); } else { let empty: String = Default::default(); let inner = self.s.as_ref().unwrap_or(&empty); let inner = inner.clone(); write_string(buf, &inner, flexible); }");
}

#[test]
fn defaults_fill_versions_without_the_field() {
    let code = generate(FLEXIBLE);
    assert_has(&code, "            timeout_ms: 30000,\n");
    assert_has(
        &code,
        "        if version >= 1 {\n            this.timeout_ms = read_i32(buf)?;\n        }\n",
    );
}

#[test]
fn samples_cover_carried_fields_and_a_data_records_version() {
    let code = generate(FLEXIBLE);
    assert_has(
        &code,
        "impl crate::protocol::tests::support::Sample for DemoRequest {",
    );
    // Tagged fields are left at their default half of the time.
    assert_has(&code, "        if version == 2 || version >= 3 {\n            if !(version >= 3 && rng.below(2) == 0) {\n                this.rack_id = if version >= 2 && rng.below(4) == 0 { None } else { Some(rng.string()) };\n");
    let code = generate("data LeaderChange versions=0 flexible=0+\n  version: i16 @0+\n");
    assert_has(&code, "this.version = version;");
}
