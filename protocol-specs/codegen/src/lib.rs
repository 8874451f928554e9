//! Strata's codec generator: turns the `*.spec` files of `protocol-specs/` (Strata's own line
//! format, documented in `protocol-specs/README.md`) into the Rust wire codec. `build.rs` runs
//! it once per folder and writes the result to `OUT_DIR`, where `src/protocol/messages.rs` and
//! `src/protocol/internal_records.rs` include it.
//!
//! For every spec it emits a module with plain structs and `decode` / `encode` for every
//! version, following the rules of Kafka's generated message classes: flexible versions
//! (KIP-482) use compact lengths and a tagged-field section, unknown tags are kept so a message
//! round-trips, and a field is an `Option` when it is nullable in some version but null on the
//! wire only in those. For `messages/` it adds the per-API lookups hand-written code needs,
//! and, for the including crate's tests only, a `Sample` generator per struct and the visitors
//! behind the round-trip and differential tests in `src/protocol/tests/`.
//!
//! By responsibility (nothing here depends on Strata; it has no dependencies at all):
//! - `range`: version ranges and the `version` tests generated from them;
//! - `model`: messages, fields and types, and the Rust each maps to;
//! - `parse`: the line format into the model, with errors that name the line;
//! - `emit`: one message into one Rust module (structs, `Decode`, `Encode`, `Sample`);
//! - `index`: the per-folder tables and lookups after the modules;
//! - `kafka_protocol`: how our messages are named in the `kafka-protocol` crate.

mod emit;
mod index;
mod kafka_protocol;
mod model;
mod parse;
mod range;

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub use parse::ParseError;

/// The folders of `protocol-specs/`, each generated into `<folder>.rs`.
pub const FOLDERS: &[&str] = &["messages", "records"];

/// The generated code of one folder and the spec files it was made from (for
/// `cargo:rerun-if-changed`).
pub struct Folder {
    pub code: String,
    pub inputs: Vec<PathBuf>,
}

#[derive(Debug)]
pub enum Error {
    Io {
        path: PathBuf,
        source: io::Error,
    },
    Parse {
        spec: String,
        source: ParseError,
    },
    /// `NOT_IN_KAFKA_PROTOCOL` names messages that have no spec in `messages/`.
    StaleKafkaProtocolEntries(Vec<&'static str>),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Parse { spec, source } => write!(f, "{spec}: {source}"),
            Error::StaleKafkaProtocolEntries(names) => write!(
                f,
                "NOT_IN_KAFKA_PROTOCOL names {}, which has no spec in protocol-specs/messages",
                names.join(", ")
            ),
        }
    }
}

impl std::error::Error for Error {}

/// Generates the code of `dir`, the folder `folder` (one of `FOLDERS`) of `protocol-specs/`:
/// every `*.spec` in it, in file-name order.
pub fn generate_folder(dir: &Path, folder: &str) -> Result<Folder, Error> {
    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let mut inputs = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_error(dir))? {
        let path = entry.map_err(io_error(dir))?.path();
        if path.extension().is_some_and(|e| e == "spec") {
            inputs.push(path);
        }
    }
    inputs.sort();
    let mut sources = Vec::new();
    for path in &inputs {
        let text = fs::read_to_string(path).map_err(io_error(path))?;
        let module = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        sources.push((module, text));
    }
    if folder == "messages" {
        let stale = kafka_protocol::stale_entries(sources.iter().map(|(m, _)| m.as_str()));
        if !stale.is_empty() {
            return Err(Error::StaleKafkaProtocolEntries(stale));
        }
    }
    let code = generate(folder, &sources)?;
    Ok(Folder { code, inputs })
}

/// Generates the code of folder `folder` from `sources`: (module name, spec text), in the
/// order the modules are to appear.
pub fn generate(folder: &str, sources: &[(String, String)]) -> Result<String, Error> {
    let mut specs = Vec::new();
    for (module, text) in sources {
        let spec = parse::parse_spec(text).map_err(|source| Error::Parse {
            spec: format!("protocol-specs/{folder}/{module}.spec"),
            source,
        })?;
        specs.push((module.clone(), spec));
    }
    let mut out = String::new();
    write_folder(&mut out, folder, &specs).expect("writing to a String cannot fail");
    Ok(out)
}

fn write_folder(out: &mut String, folder: &str, specs: &[(String, model::Spec)]) -> fmt::Result {
    for (module, spec) in specs {
        emit::module(out, folder, module, spec)?;
    }
    index::emit(out, folder, specs)
}

#[cfg(test)]
mod tests;
