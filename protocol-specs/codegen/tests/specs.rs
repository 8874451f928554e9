//! Strata's own specs (`protocol-specs/messages` and `records`) all generate, and the output
//! does not depend on anything but the files.

use std::path::PathBuf;

fn folder(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
}

#[test]
fn every_folder_generates() {
    for name in strata_codegen::FOLDERS {
        let dir = folder(name);
        let generated = strata_codegen::generate_folder(&dir, name)
            .unwrap_or_else(|e| panic!("protocol-specs/{name}: {e}"));
        let specs = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "spec")
            })
            .count();
        assert_eq!(generated.inputs.len(), specs);
        assert_eq!(
            generated.code.matches("\npub mod ").count() + 1,
            specs,
            "{name}"
        );
        assert!(generated
            .code
            .contains("pub const SPECS: &[(&str, &str, i16, i16, i16, bool)] = &["));
        let again = strata_codegen::generate_folder(&dir, name).unwrap();
        assert!(again.code == generated.code, "{name}: two runs differ");
    }
}

#[test]
fn messages_have_the_per_api_lookups() {
    let code = strata_codegen::generate_folder(&folder("messages"), "messages")
        .unwrap()
        .code;
    for item in [
        "pub fn is_flexible_request(",
        "pub fn is_flexible_response(",
        "pub fn response_throttle_time_offset(",
        "pub fn validate_request(",
        "pub(crate) fn visit_kafka_protocol_pairs(",
        "pub(crate) fn visit_kafka_protocol_apis(",
    ] {
        assert!(code.contains(item), "no {item}");
    }
    // Produce (key 0) is decoded by validate_request.
    assert!(code.contains("produce_request::ProduceRequest::decode(buf, version)?;"));
}
