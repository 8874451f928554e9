//! The module layering of `src/` (DESIGN.md, section 1): a module may name only modules below
//! it. Scans every non-test source file for `crate::<module>` paths, so an upward import (the
//! circles server -> handlers -> cluster -> handlers, or error -> storage -> error, that once
//! existed) fails here.
use std::path::{Path, PathBuf};

/// Rank of each top-level module; a file may use modules of a lower rank only, and any leaf.
const RANKS: &[(&str, u8)] = &[
    ("protocol", 0),
    ("storage", 1),
    ("replica", 2),
    ("controller", 3),
    ("security", 4),
    ("coordinator", 5),
    ("net", 5),
    ("cluster", 6),
    ("broker", 7),
    ("handlers", 8),
    // The admin listener reads the broker; start-up (server) starts it.
    ("admin", 9),
    ("server", 10),
];

/// The leaves, below every layer so that every layer may use them, and the only modules of
/// ours each may use in turn. `error` is Kafka's codes alone (each subsystem maps its own
/// errors to them, beside the error type); `config` is typed values that name no protocol or
/// storage type; `metrics` holds counters only (no broker, no network).
const LEAVES: &[(&str, &[&str])] = &[
    ("error", &[]),
    ("clock", &[]),
    ("logging", &[]),
    ("config", &["error"]),
    ("metrics", &["error"]),
];

fn rank(module: &str) -> Option<u8> {
    RANKS.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)
}

/// The leaves `module` may use, if it is a leaf.
fn leaf_uses(module: &str) -> Option<&'static [&'static str]> {
    LEAVES.iter().find(|(m, _)| *m == module).map(|(_, u)| *u)
}

/// The imports of a file of top-level module `top` that break the layering.
fn violations(top: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for used in used_modules(text) {
        if used == top {
            continue;
        }
        let allowed = match leaf_uses(top) {
            // A leaf names only the leaves listed for it.
            Some(uses) => uses.contains(&used.as_str()),
            None => match rank(top) {
                Some(own) => leaf_uses(&used).is_some() || rank(&used).is_none_or(|r| r < own),
                // Unranked (lib.rs, main.rs, the test-only `sim`): above everything.
                None => true,
            },
        };
        if !allowed {
            out.push(format!("crate::{used}"));
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            // Test-only code may reach across layers to set up its fixtures.
            if path.file_name().is_some_and(|n| n == "tests") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_stem().unwrap().to_string_lossy();
            if name != "tests" && !name.ends_with("_tests") {
                out.push(path);
            }
        }
    }
}

/// The modules a file names as `crate::<module>`.
fn used_modules(text: &str) -> Vec<String> {
    let mut used = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        // `strata::crate::` cannot occur; skip `$crate::` in macros.
        if i > 0 && text.as_bytes()[i - 1] == b'$' {
            continue;
        }
        let rest = &text[i + "crate::".len()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        used.push(rest[..end].to_string());
    }
    used
}

#[test]
fn no_module_imports_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let top = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        let text = std::fs::read_to_string(file).unwrap();
        for used in violations(&top, &text) {
            found.push(format!("{} uses {used}", relative.display()));
        }
    }
    found.sort();
    found.dedup();
    assert!(
        found.is_empty(),
        "upward or sideways imports:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_sees_an_upward_import() {
    assert_eq!(
        used_modules("use crate::handlers::Broker; x = $crate::y; crate::net::peer"),
        vec!["handlers", "net"]
    );
    assert!(rank("handlers") > rank("cluster"));
}

/// Leaves are checked too, each against its own short list: the `From` impls that once made
/// `error` import seven subsystems, or config naming a protocol type, fail the scan.
#[test]
fn the_scan_sees_a_leaf_importing_anything_but_its_leaves() {
    assert_eq!(
        violations(
            "error",
            "use crate::storage::StorageError; use crate::error::ErrorCode;"
        ),
        vec!["crate::storage"]
    );
    assert_eq!(
        violations("error", "use crate::config::ConfigError;"),
        vec!["crate::config"]
    );
    assert_eq!(
        violations("config", "use crate::protocol::records::Compression;"),
        vec!["crate::protocol"]
    );
    assert_eq!(
        violations("metrics", "x: crate::replica::wait::Waits"),
        vec!["crate::replica"]
    );
    assert!(violations("config", "use crate::error::ErrorCode;").is_empty());
    assert!(violations("metrics", "crate::error::ErrorCode::NONE").is_empty());
    // A layer may use every leaf and what is below it, nothing above.
    assert!(violations(
        "storage",
        "crate::config::X; crate::metrics::Y; crate::protocol::Z"
    )
    .is_empty());
    assert_eq!(
        violations("storage", "crate::replica::X"),
        vec!["crate::replica"]
    );
}
