//! Generates the wire codec from `protocol-specs/` with the generator in
//! `protocol-specs/codegen` (the `strata-codegen` crate, which has the details and its own
//! tests): one `<folder>.rs` in `OUT_DIR` per folder of specs, included by
//! `src/protocol/messages.rs` and `src/protocol/internal_records.rs`.

use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    // The generator itself is a path build-dependency: cargo reruns this script when it changes.
    println!("cargo:rerun-if-changed=build.rs");
    for folder in strata_codegen::FOLDERS {
        let dir = root.join("protocol-specs").join(folder);
        println!("cargo:rerun-if-changed={}", dir.display());
        let generated = strata_codegen::generate_folder(&dir, folder)
            .unwrap_or_else(|e| panic!("generating the codec: {e}"));
        for file in &generated.inputs {
            println!("cargo:rerun-if-changed={}", file.display());
        }
        std::fs::write(out_dir.join(format!("{folder}.rs")), generated.code).unwrap();
    }
}
