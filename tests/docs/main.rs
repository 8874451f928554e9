//! The README and every page of `docs/` checked against the code they describe (issue 35):
//!
//! - the generated tables equal what `strata config-keys` and `strata api-table` print;
//! - every configuration key they name (in backticks, in a `properties` block, after
//!   `--override` or `--add-config`) is one the config registry knows, or is on one of the
//!   short lists below (client keys, feature names, ...);
//! - every `strata` or `cargo run` command they show is accepted by the real binary's argument
//!   parser, and its `--override` keys by the configuration loader;
//! - every relative link, and every repository path in backticks, names something that exists;
//! - every crate of `Cargo.toml` is in `docs/dependencies.md` with its reason.
//!
//! Markdown is read just far enough for that (`markdown.rs`: fenced blocks, code spans, links,
//! headings with GitHub's anchors), and so are the shell lines the pages show (`shell.rs`).
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use strata::config::{registry, BrokerConfig};

use markdown::{github_slug, normalize, pages, Doc};
use shell::{settings, shell_words, strata_args};

mod markdown;
mod shell;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Keys of Kafka's clients and tools (not the broker's), as quickstarts and recipes set them.
const CLIENT_KEYS: &[&str] = &[
    "group.protocol",
    "security.protocol",
    "sasl.mechanism",
    "sasl.username",
    "sasl.password",
    "ssl.ca.location",
];

/// Feature names (`kafka-features`, `strata storage format --feature`), not config keys.
const FEATURES: &[&str] = &[
    "metadata.version",
    "kraft.version",
    "group.version",
    "transaction.version",
    "share.version",
];

/// Dotted names that are neither: logger names (BROKER_LOGGER), files and fields of files
/// Strata writes, and Kafka keys named as ones Strata does not have.
const OTHER_NAMES: &[&str] = &[
    // A logger: the tracing target of `strata::storage`.
    "strata.storage",
    // Files and fields of files in a log dir.
    "partition.metadata",
    "bootstrap.voters",
    "directory.id",
    // Warned about as unknown, and said so (DescribeLogDirs v5).
    "cordoned.log.dirs",
];

/// Code spans that begin with `strata` but are not commands.
const NOT_COMMANDS: &[&str] = &[
    // The line the broker logs once it serves.
    "strata started",
];

/// Paths in backticks that are not in the repository: made at run time, or Kafka's own.
const PATHS_NOT_IN_THE_REPOSITORY: &[&str] = &[
    "compat-tests/.cache",
    "fuzz/target",
    "config/server.properties",
    "config/kraft/server.properties",
];

/// The last part of a dotted name that is a file, not a key (`server.properties`).
const FILE_EXTENSIONS: &[&str] = &[
    "properties",
    "pem",
    "key",
    "csr",
    "ext",
    "md",
    "rs",
    "sh",
    "py",
    "json",
    "log",
    "index",
    "timeindex",
    "txnindex",
    "snapshot",
    "toml",
    "txt",
    "imported",
];

/// Whether `s` is written like a config key: dot-separated lower-case words, maybe ending in
/// `.*` (a family of keys), and not a file name.
fn key_shaped(s: &str) -> bool {
    let body = s.strip_suffix(".*").unwrap_or(s);
    let parts: Vec<&str> = body.split('.').collect();
    parts.len() >= 2
        && parts[0].starts_with(|c: char| c.is_ascii_lowercase())
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
        && !FILE_EXTENSIONS.contains(parts.last().unwrap())
}

/// Every key name the configuration code knows: broker keys, topic keys, group keys,
/// client-metrics keys, TLS keys (also per listener, below), OAUTHBEARER keys and the Kafka
/// keys Strata accepts without acting on them.
fn registry_names() -> BTreeSet<String> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    names.extend(registry::BROKER_CONFIGS.iter().map(|d| d.name.to_string()));
    names.extend(registry::IGNORED_KAFKA_KEYS.iter().map(|k| k.to_string()));
    names.extend(
        strata::config::topic::TOPIC_CONFIGS
            .iter()
            .map(|t| t.def.name.to_string()),
    );
    let defaults =
        strata::config::group::GroupConfigDefaults::from_broker(&BrokerConfig::default());
    names.extend(
        strata::config::group::describe_group_configs(&BTreeMap::new(), &defaults, |_| vec![])
            .into_iter()
            .map(|e| e.name),
    );
    names.extend(
        strata::config::client_metrics::describe_client_metrics(&BTreeMap::new())
            .into_iter()
            .map(|e| e.name),
    );
    names.extend(
        strata::config::security::TLS_KEYS
            .iter()
            .map(|k| k.to_string()),
    );
    names.extend(strata::config::oauth::KEYS.iter().map(|k| k.to_string()));
    names
}

/// Whether `key` is neither a key the configuration code knows nor on the lists above
/// (whose entries it marks as used).
fn unknown_key(key: &str, names: &BTreeSet<String>, used: &mut BTreeSet<&'static str>) -> bool {
    for list in [CLIENT_KEYS, FEATURES, OTHER_NAMES] {
        if let Some(k) = list.iter().find(|k| **k == key) {
            used.insert(*k);
            return false;
        }
    }
    if let Some(prefix) = key.strip_suffix('*') {
        return !names.iter().any(|n| n.starts_with(prefix));
    }
    if names.contains(key) || strata::config::sasl::handles(key) {
        return false;
    }
    // `listener.name.<listener>.<key>`: the key as it may be set per listener.
    if let Some((_, inner)) = key
        .strip_prefix("listener.name.")
        .and_then(|r| r.split_once('.'))
    {
        return !strata::config::security::TLS_KEYS.contains(&inner);
    }
    true
}

fn section(doc: &Doc, name: &str) -> String {
    let start = format!("<!-- {name}:start -->\n");
    let end = format!("<!-- {name}:end -->");
    let a = doc
        .text
        .find(&start)
        .unwrap_or_else(|| panic!("{} lacks {start}", doc.name()))
        + start.len();
    let b = doc.text[a..]
        .find(&end)
        .unwrap_or_else(|| panic!("{} lacks {end}", doc.name()))
        + a;
    doc.text[a..b].to_string()
}

#[test]
fn the_api_table_is_generated_from_the_handlers() {
    assert_eq!(
        section(&Doc::read("docs/supported-apis.md"), "api-table"),
        strata::handlers::api_table_markdown(),
        "docs/supported-apis.md: regenerate the table with `cargo run -q -- api-table` and \
         paste it between the api-table markers"
    );
}

#[test]
fn the_config_table_is_generated_from_the_registry() {
    assert_eq!(
        section(&Doc::read("docs/configuration.md"), "config-keys"),
        strata::handlers::config_table_markdown(),
        "docs/configuration.md: regenerate the table with `cargo run -q -- config-keys` and \
         paste it between the config-keys markers"
    );
}

#[test]
fn every_config_key_named_exists() {
    let names = registry_names();
    let mut used = BTreeSet::new();
    let mut unknown = Vec::new();
    for doc in pages() {
        let mut check = |line: usize, key: &str, used: &mut BTreeSet<&'static str>| {
            if unknown_key(key, &names, used) {
                unknown.push(format!("{}:{line}: `{key}`", doc.name()));
            }
        };
        for (line, span) in doc.code_spans() {
            let key = span.split_once('=').map_or(span.as_str(), |(k, _)| k);
            if key_shaped(key) {
                check(line, key, &mut used);
            }
        }
        for fence in doc.fences.iter().filter(|f| f.lang == "properties") {
            for (i, line) in fence.body.replace("\\\n", "").lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with(['#', '!']) {
                    continue;
                }
                let key = line.split(['=', ':']).next().unwrap().trim();
                check(fence.line + 1 + i, key, &mut used);
            }
        }
        for (line, words) in doc.commands() {
            for setting in settings(&words) {
                let key = setting.split('=').next().unwrap();
                if key_shaped(key) {
                    check(line, key, &mut used);
                }
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "not keys of the config registry (src/config), nor on the lists of tests/docs/main.rs:\n{}",
        unknown.join("\n")
    );
    let unused: Vec<&&str> = CLIENT_KEYS
        .iter()
        .chain(FEATURES)
        .chain(OTHER_NAMES)
        .filter(|k| !used.contains(**k))
        .collect();
    assert!(
        unused.is_empty(),
        "no page names these any more; take them off the lists: {unused:?}"
    );
}

#[test]
fn every_strata_command_shown_is_accepted() {
    let binary = env!("CARGO_BIN_EXE_strata");
    let mut refused = Vec::new();
    let mut checked = 0;
    let mut not_commands = BTreeSet::new();
    for doc in pages() {
        for (line, words) in doc.commands() {
            if let Some(text) = NOT_COMMANDS.iter().find(|t| **t == words.join(" ")) {
                not_commands.insert(*text);
                continue;
            }
            let Some(args) = strata_args(&words) else {
                continue;
            };
            checked += 1;
            let at = format!("{}:{line}: `{}`", doc.name(), words.join(" "));
            // `--help` after the arguments: clap checks every flag and subcommand before it and
            // stops there, so nothing runs.
            let out = Command::new(binary)
                .args(&args)
                .arg("--help")
                .output()
                .unwrap();
            if !out.status.success() {
                refused.push(format!(
                    "{at}\n  {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            let overrides: Vec<String> = args
                .windows(2)
                .filter(|p| p[0] == "--override")
                .map(|p| p[1].clone())
                .collect();
            match BrokerConfig::load(None, &overrides) {
                Ok((_, warnings)) => {
                    // Unknown keys, and Kafka keys Strata does not act on.
                    for w in warnings {
                        refused.push(format!("{at}\n  {w}"));
                    }
                }
                Err(e) => refused.push(format!("{at}\n  {e}")),
            }
        }
    }
    assert!(
        checked >= 5,
        "only {checked} strata commands found: is the parser broken?"
    );
    assert!(
        refused.is_empty(),
        "commands the binary refuses:\n{}",
        refused.join("\n")
    );
    assert_eq!(
        not_commands.len(),
        NOT_COMMANDS.len(),
        "NOT_COMMANDS lists spans no page has any more"
    );
}

#[test]
fn every_test_command_shown_exists() {
    let script = std::fs::read_to_string(Path::new(ROOT).join("tests/run-all.sh")).unwrap();
    let mut missing = Vec::new();
    for doc in pages() {
        for (line, words) in doc.commands() {
            let words: Vec<&str> = words
                .iter()
                .map(|w| w.as_str())
                .skip_while(|w| w.contains('=') && w.starts_with(|c: char| c.is_ascii_uppercase()))
                .collect();
            match words.as_slice() {
                ["tests/run-all.sh", flag, ..] if flag.starts_with("--") => {
                    let handled = script
                        .lines()
                        .filter(|l| !l.trim_start().starts_with('#'))
                        .any(|l| {
                            l.contains(&format!("want {flag}")) || l.contains(&format!("= {flag}"))
                        });
                    if !handled {
                        missing.push(format!(
                            "{}:{line}: tests/run-all.sh has no {flag}",
                            doc.name()
                        ));
                    }
                }
                ["cargo", "test", rest @ ..] => {
                    if let Some(i) = rest.iter().position(|w| *w == "--test") {
                        let name = rest.get(i + 1).unwrap_or(&"");
                        // Cargo's test targets: `tests/<name>.rs` or `tests/<name>/main.rs`.
                        let tests = Path::new(ROOT).join("tests");
                        if !name.is_empty()
                            && !name.starts_with('<')
                            && !tests.join(format!("{name}.rs")).exists()
                            && !tests.join(name).join("main.rs").exists()
                        {
                            missing.push(format!("{}:{line}: no test target {name}", doc.name()));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn every_relative_link_and_anchor_exists() {
    let root = Path::new(ROOT);
    let mut docs = pages();
    docs.push(Doc::read("BENCHMARKS.md"));
    let mut anchors: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut broken = Vec::new();
    for doc in &docs {
        for (line, target) in doc.links() {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                doc.path.clone()
            } else {
                normalize(&doc.path.parent().unwrap().join(file))
            };
            if !root.join(&path).exists() {
                broken.push(format!("{}:{line}: {target}: no such file", doc.name()));
                continue;
            }
            if anchor.is_empty() {
                continue;
            }
            let known = anchors.entry(path.clone()).or_insert_with(|| {
                if path.extension().is_some_and(|e| e == "md") {
                    Doc::read(path.to_str().unwrap()).anchors()
                } else {
                    BTreeSet::new()
                }
            });
            if !known.contains(anchor) {
                broken.push(format!("{}:{line}: {target}: no such heading", doc.name()));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn every_repository_path_named_exists() {
    let root = Path::new(ROOT);
    let mut missing = Vec::new();
    for doc in pages() {
        for (line, span) in doc.code_spans() {
            // A path: no spaces or placeholders, a slash, and a first part that is a folder of
            // the repository or of src/.
            let path = span.split(':').next().unwrap().trim_end_matches('/');
            if !path.contains('/')
                || path.contains(|c: char| c.is_whitespace() || "{}<>*[]$?~".contains(c))
                || path.starts_with(['.', '/']) && !path.starts_with(".ci/")
                || PATHS_NOT_IN_THE_REPOSITORY.contains(&path)
            {
                continue;
            }
            let first = path.split('/').next().unwrap();
            if !root.join(first).is_dir() && !root.join("src").join(first).is_dir() {
                continue;
            }
            if !root.join(path).exists() && !root.join("src").join(path).exists() {
                missing.push(format!("{}:{line}: `{span}`", doc.name()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_page_is_in_the_index() {
    let index = Doc::read("docs/README.md");
    let linked: BTreeSet<String> = index.links().into_iter().map(|(_, t)| t).collect();
    let missing: Vec<String> = pages()
        .iter()
        .filter_map(|d| {
            d.path
                .strip_prefix("docs")
                .ok()
                .map(|p| p.display().to_string())
        })
        .filter(|p| p != "README.md" && !linked.contains(p))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/README.md does not link {missing:?}"
    );
}

#[test]
fn the_readme_stays_short_and_keeps_its_two_commands() {
    let readme = Doc::read("README.md");
    let lines = readme.text.lines().count();
    assert!(
        lines < 150,
        "README.md has {lines} lines; move detail into docs/"
    );
    let shell: Vec<&str> = readme
        .fences
        .iter()
        .filter(|f| f.lang == "sh")
        .map(|f| f.body.trim())
        .collect();
    for command in ["cargo run --release", "tests/run-all.sh"] {
        assert!(
            shell.contains(&command),
            "README.md lacks the command `{command}`"
        );
    }
}

/// The crates of one `Cargo.toml`: every `[*dependencies]` table and `[*dependencies.<name>]`.
fn cargo_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_table = false;
    for line in manifest.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']');
            in_table = header.ends_with("dependencies");
            if let Some((table, name)) = header.rsplit_once('.') {
                if table.ends_with("dependencies") {
                    out.insert(name.trim_matches('"').to_string());
                }
            }
            continue;
        }
        if in_table && !line.is_empty() && !line.starts_with('#') {
            if let Some(name) = line.split(['=', '.']).next() {
                out.insert(name.trim().trim_matches('"').to_string());
            }
        }
    }
    out
}

#[test]
fn every_dependency_is_listed_with_its_reason() {
    let manifest = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    let crates = cargo_dependencies(&manifest);
    assert!(
        crates.contains("tokio") && crates.contains("rcgen"),
        "Cargo.toml not read: {crates:?}"
    );
    let page = Doc::read("docs/dependencies.md");
    let mut listed = BTreeSet::new();
    for line in page.prose.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 2 || cells[0] == "crate" || cells[0].starts_with("---") {
            continue;
        }
        assert!(
            !cells[1].is_empty(),
            "docs/dependencies.md: {} has no reason",
            cells[0]
        );
        // `openraft (pinned =0.9.25)`, `proptest, tempfile (dev)`.
        let names = cells[0].split('(').next().unwrap();
        listed.extend(
            names
                .split(',')
                .map(|n| n.trim().trim_matches('`').to_string()),
        );
    }
    let missing: Vec<&String> = crates.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "crates of Cargo.toml not in docs/dependencies.md (add a row saying why): {missing:?}"
    );
    let extra: Vec<&String> = listed.difference(&crates).collect();
    assert!(
        extra.is_empty(),
        "docs/dependencies.md lists crates Cargo.toml lacks: {extra:?}"
    );
}

/// The checks above must be able to fail: a few known-bad inputs through the same helpers.
#[test]
fn the_checks_catch_what_they_are_for() {
    let names = registry_names();
    let mut used = BTreeSet::new();
    assert!(!unknown_key("log.retention.ms", &names, &mut used));
    assert!(unknown_key("log.retention.millis", &names, &mut used));
    assert!(!unknown_key("strata.*", &names, &mut used));
    assert!(unknown_key("stratum.*", &names, &mut used));
    assert!(!unknown_key(
        "listener.name.sasl_ssl.ssl.keystore.location",
        &names,
        &mut used
    ));
    assert!(unknown_key(
        "listener.name.sasl_ssl.ssl.keystore.place",
        &names,
        &mut used
    ));
    assert!(key_shaped("log.dirs") && !key_shaped("server.properties") && !key_shaped("0.9.25"));
    assert_eq!(
        shell_words("KAFKA_ID=\"$(strata storage random-uuid)\" && strata --override node.id=$i &"),
        vec![
            vec!["strata".to_string(), "storage".into(), "random-uuid".into()],
            vec!["KAFKA_ID=2".into()],
            vec!["strata".into(), "--override".into(), "node.id=2".into()],
        ]
    );
    assert_eq!(
        github_slug("Share groups (KIP-932)"),
        "share-groups-kip-932",
        "GitHub's anchor rule"
    );
    assert_eq!(
        github_slug("Run D (latest `benches/compare.sh` output)"),
        "run-d-latest-benchescomparesh-output"
    );
    let binary = env!("CARGO_BIN_EXE_strata");
    let out = Command::new(binary)
        .args(["storage", "fromat", "--help"])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "a misspelt subcommand must be refused"
    );
    let deps = cargo_dependencies(
        "[dependencies]\na = \"1\"\nb.workspace = true\n[dev-dependencies.c]\nversion = \"1\"\n",
    );
    assert_eq!(
        deps,
        ["a", "b", "c"].map(String::from).into_iter().collect()
    );
}
