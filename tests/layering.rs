//! The module layering of `src/` (README "Layout"): a module may name only modules below it.
//! Scans every non-test source file for `crate::<module>` paths, so an upward import (the
//! circles server -> handlers -> cluster -> handlers that once existed) fails here.
use std::path::{Path, PathBuf};

/// Rank of each top-level module; a file may use modules of a lower rank only. `config`,
/// `clock`, `error` and `logging` are leaves anyone may use.
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

/// `metrics` holds counters only (no broker, no network), so every layer may update it.
const LEAVES: &[&str] = &["config", "clock", "error", "logging", "metrics"];

fn rank(module: &str) -> Option<u8> {
    RANKS.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)
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
    let mut violations = Vec::new();
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
        let Some(own) = rank(&top) else { continue };
        let text = std::fs::read_to_string(file).unwrap();
        for used in used_modules(&text) {
            if used == top || LEAVES.contains(&used.as_str()) {
                continue;
            }
            if rank(&used).is_some_and(|r| r >= own) {
                violations.push(format!("{} uses crate::{used}", relative.display()));
            }
        }
    }
    violations.sort();
    violations.dedup();
    assert!(
        violations.is_empty(),
        "upward or sideways imports:\n{}",
        violations.join("\n")
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
