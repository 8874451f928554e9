//! A small `messages` folder generated end to end: the per-folder tables and lookups.

use crate::{generate, Error};

fn sources(specs: &[(&str, &str)]) -> Vec<(String, String)> {
    specs
        .iter()
        .map(|(m, s)| (m.to_string(), s.to_string()))
        .collect()
}

const REQUEST: &str = "request DemoRequest key=99 versions=0-4 flexible=3+\n  name: string @0+\n";
const RESPONSE: &str = "\
response DemoResponse key=99 versions=0-4 flexible=3+
  error_code: i16 @1+
  throttle_time_ms: i32 @0+
";

fn messages() -> String {
    generate(
        "messages",
        &sources(&[("demo_request", REQUEST), ("demo_response", RESPONSE)]),
    )
    .unwrap()
}

#[test]
fn modules_come_first_with_their_provenance() {
    let code = messages();
    assert!(code.starts_with("pub mod demo_request {\n//! `DemoRequest` (request, API key 99), versions 0-4, generated from `protocol-specs/messages/demo_request.spec`.\n"), "{code}");
    assert!(code.contains("pub mod demo_response {\n"));
}

#[test]
fn the_specs_table_lists_every_spec() {
    let code = messages();
    assert!(code.contains("    (\"DemoRequest\", \"request\", 99, 0, 4, true),\n"));
    // A file not named after its message is flagged, for the consistency test.
    let code = generate(
        "records",
        &sources(&[("misnamed", "data Key versions=none flexible=none\n")]),
    )
    .unwrap();
    assert!(
        code.contains("    (\"Key\", \"data\", -1, 1, -1, false),\n"),
        "{code}"
    );
}

#[test]
fn messages_get_per_api_lookups() {
    let code = messages();
    assert!(code.contains("        99 => Some(demo_request::DemoRequest::is_flexible(version)),\n"));
    assert!(
        code.contains("        99 => Some(demo_response::DemoResponse::is_flexible(version)),\n")
    );
    assert!(code.contains("            demo_request::DemoRequest::decode(buf, version)?;\n"));
    assert!(code.contains("v.visit::<kafka_protocol::messages::demo_request::DemoRequest, kafka_protocol::messages::demo_response::DemoResponse>(99, 0, 4);"));
    // Records have none of them.
    let code = generate("records", &sources(&[("demo_request", REQUEST)])).unwrap();
    assert!(!code.contains("is_flexible_request"));
    assert!(!code.contains("validate_request"));
    assert!(code.contains("pub(crate) fn visit_all("));
}

#[test]
fn throttle_offsets_count_only_fixed_width_fields_before_it() {
    let code = messages();
    assert!(code.contains("        99 => match version {\n            0..=0 => Some(0),\n            1..=4 => Some(2),\n            _ => None,\n        },\n"), "{code}");
    let response = "response R key=7 versions=0-1 flexible=none\n  message: string @1+\n  throttle_time_ms: i32 @0+\n";
    let spec = crate::parse::parse_spec(response).unwrap();
    assert_eq!(crate::index::throttle_offset_runs(&spec), [(0, 0, 0)]);
}

#[test]
fn a_bad_spec_is_an_error_naming_its_file_and_line() {
    let bad = sources(&[(
        "bad_request",
        "request Bad key=1 versions=0 flexible=none\n  a: i32 @0 ?\n",
    )]);
    let Err(e @ Error::Parse { .. }) = generate("messages", &bad) else {
        panic!("expected a parse error");
    };
    assert_eq!(
        e.to_string(),
        "protocol-specs/messages/bad_request.spec: line 2: unknown token `?`"
    );
}
