//! One spec into one Rust module: for the message and each of its structs, the struct itself
//! (an `Option` for every field nullable in some version, and `unknown_tagged_fields` when any
//! version is flexible), its `Default` (the spec's defaults: what versions without a field
//! read as), the message's version constants, and the `Decode`, `Encode` and test-only `Sample`
//! impls (`decode`, `encode` and `sample` beside this file).
//!
//! The generated module expects `crate::protocol::codec::*` in scope (`Bytes`, `BytesMut`,
//! `Uuid`, the read/write primitives, `RawTaggedField`).

mod decode;
mod encode;
mod sample;

use std::fmt::{self, Write as _};

use crate::model::{ident, Field, Kind, Spec};

/// Appends `pub mod <module> { .. }` for `spec`, read from `protocol-specs/<folder>/<module>.spec`.
pub fn module(out: &mut String, folder: &str, module: &str, spec: &Spec) -> fmt::Result {
    writeln!(out, "pub mod {module} {{")?;
    writeln!(
        out,
        "//! `{}` ({}{}), versions {}, generated from `protocol-specs/{folder}/{module}.spec`.",
        spec.name,
        spec.kind.as_str(),
        spec.api_key
            .map(|k| format!(", API key {k}"))
            .unwrap_or_default(),
        if spec.versions.is_empty() {
            "none".to_string()
        } else {
            format!("{}-{}", spec.versions.min, spec.versions.max)
        },
    )?;
    writeln!(
        out,
        "#![allow(clippy::all, unused_mut, unused_variables, unused_parens)]"
    )?;
    writeln!(out, "use crate::protocol::codec::*;")?;
    message(out, spec)?;
    writeln!(out, "}}")
}

/// The message's items: the top-level struct first, then the others by name.
pub fn message(out: &mut String, spec: &Spec) -> fmt::Result {
    emit_struct(out, spec, &spec.name, &spec.fields, true)?;
    for (name, fields) in spec.nested_structs() {
        emit_struct(out, spec, &name, &fields, false)?;
    }
    Ok(())
}

fn emit_struct(
    o: &mut String,
    spec: &Spec,
    name: &str,
    fields: &[Field],
    top: bool,
) -> fmt::Result {
    let flex = spec.can_be_flexible();
    let flexible_test = spec.flexible.test();
    writeln!(o, "#[derive(Debug, Clone, PartialEq)]")?;
    writeln!(o, "pub struct {name} {{")?;
    for f in fields {
        writeln!(o, "    pub {}: {},", ident(&f.name), f.rust_ty())?;
    }
    if flex {
        writeln!(
            o,
            "    /// Tagged fields this version of Strata does not know, kept for round-trips."
        )?;
        writeln!(o, "    pub unknown_tagged_fields: Vec<RawTaggedField>,")?;
    }
    writeln!(o, "}}\n")?;

    writeln!(
        o,
        "impl Default for {name} {{\n    fn default() -> Self {{\n        Self {{"
    )?;
    for f in fields {
        writeln!(o, "            {}: {},", ident(&f.name), f.default_expr())?;
    }
    if flex {
        writeln!(o, "            unknown_tagged_fields: Vec::new(),")?;
    }
    writeln!(o, "        }}\n    }}\n}}\n")?;

    if top {
        writeln!(o, "impl {name} {{")?;
        if let Some(k) = spec.api_key {
            writeln!(o, "    pub const API_KEY: i16 = {k};")?;
        }
        writeln!(o, "    pub const MIN_VERSION: i16 = {};", spec.versions.min)?;
        writeln!(o, "    pub const MAX_VERSION: i16 = {};", spec.versions.max)?;
        writeln!(
            o,
            "    /// Whether `version` uses compact types and tagged fields.\n    pub fn is_flexible(version: i16) -> bool {{ {} }}",
            flexible_test
        )?;
        writeln!(o, "}}\n")?;
    }

    decode::emit_impl(o, name, fields, flex, &flexible_test)?;
    // A data spec's own `version` field holds its schema version (see `sample`).
    let top_data = top && spec.kind == Kind::Data;
    sample::emit_impl(o, name, fields, flex, &flexible_test, top_data)?;
    encode::emit_impl(o, name, fields, flex, &flexible_test)
}

#[cfg(test)]
mod tests;
