//! The tables generated once per folder of specs, after its modules: `SPECS` (every spec's
//! name, kind, API key and versions, which the ApiVersions and spec-consistency tests read),
//! and for `messages/` the per-API lookups that hand-written code needs without knowing the
//! message types (`is_flexible_request` / `is_flexible_response` for the header versions,
//! `response_throttle_time_offset` for quotas, `validate_request` for the robustness tests and
//! the fuzz target). Last, the test-only visitors that drive the round-trip tests over every
//! message and the differential tests over the pairs shared with `kafka-protocol`.

use std::fmt::{self, Write as _};

use crate::kafka_protocol;
use crate::model::{snake, Kind, Spec};

/// Appends the folder's tables; `specs` are (module, spec) in module order.
pub fn emit(out: &mut String, folder: &str, specs: &[(String, Spec)]) -> fmt::Result {
    specs_table(out, specs)?;
    if folder == "messages" {
        writeln!(
            out,
            "use crate::protocol::codec::{{Bytes, Decode, DecodeError}};"
        )?;
        for kind in [Kind::Request, Kind::Response] {
            is_flexible(out, kind, specs)?;
        }
        throttle_offsets(out, specs)?;
        validate_request(out, specs)?;
    }
    visit_all(out, specs)?;
    if folder == "messages" {
        visit_kafka_protocol_pairs(out, specs)?;
        visit_kafka_protocol_apis(out, specs)?;
    }
    Ok(())
}

fn specs_table(out: &mut String, specs: &[(String, Spec)]) -> fmt::Result {
    writeln!(
        out,
        "/// (name, kind, api key, min version, max version, file named after message) of every spec.\npub const SPECS: &[(&str, &str, i16, i16, i16, bool)] = &["
    )?;
    for (m, spec) in specs {
        writeln!(
            out,
            "    ({:?}, {:?}, {}, {}, {}, {}),",
            spec.name,
            spec.kind.as_str(),
            spec.api_key.unwrap_or(-1),
            spec.versions.min,
            if spec.versions.is_empty() {
                -1
            } else {
                spec.versions.max
            },
            snake(&spec.name) == *m
        )?;
    }
    writeln!(out, "];")
}

/// The messages of one kind with an API key, as (module, spec).
fn apis(specs: &[(String, Spec)], kind: Kind) -> impl Iterator<Item = (&String, &Spec, i16)> {
    specs
        .iter()
        .filter(move |(_, s)| s.kind == kind)
        .filter_map(|(m, s)| Some((m, s, s.api_key?)))
}

fn is_flexible(out: &mut String, kind: Kind, specs: &[(String, Spec)]) -> fmt::Result {
    let kind_name = kind.as_str();
    writeln!(
        out,
        "/// Whether `version` of the {kind_name} with `api_key` is flexible (compact types, tagged\n/// fields); `None` for an API key Strata has no {kind_name} spec for."
    )?;
    writeln!(
        out,
        "pub fn is_flexible_{kind_name}(api_key: i16, version: i16) -> Option<bool> {{\n    match api_key {{"
    )?;
    for (m, spec, k) in apis(specs, kind) {
        writeln!(
            out,
            "        {k} => Some({m}::{}::is_flexible(version)),",
            spec.name
        )?;
    }
    writeln!(out, "        _ => None,\n    }}\n}}\n")
}

/// The byte offset of the top-level `throttle_time_ms` of `spec` (a response) in each version,
/// merged into (first version, last version, offset) runs; only versions in which the field is
/// positional and only fixed-width fields precede it have one, so the quota code can set it in
/// an encoded response without knowing its type.
pub fn throttle_offset_runs(spec: &Spec) -> Vec<(i16, i16, usize)> {
    let mut runs: Vec<(i16, i16, usize)> = Vec::new();
    if spec.versions.is_empty() {
        return runs;
    }
    for v in spec.versions.min..=spec.versions.max {
        let mut offset = Some(0usize);
        let mut found = None;
        for f in &spec.fields {
            if f.tag.is_some() || !f.versions.contains(v) {
                continue;
            }
            if f.name == "throttle_time_ms" {
                found = offset;
                break;
            }
            offset = offset.and_then(|o| f.ty.fixed_width().map(|w| o + w));
        }
        if let Some(o) = found {
            match runs.last_mut() {
                Some(last) if last.1 + 1 == v && last.2 == o => last.1 = v,
                _ => runs.push((v, v, o)),
            }
        }
    }
    runs
}

fn throttle_offsets(out: &mut String, specs: &[(String, Spec)]) -> fmt::Result {
    writeln!(
        out,
        "/// The byte offset of `throttle_time_ms` in the body of response `api_key` at `version`,\n/// when the version has the field and only fixed-width fields precede it."
    )?;
    writeln!(
        out,
        "pub fn response_throttle_time_offset(api_key: i16, version: i16) -> Option<usize> {{\n    match api_key {{"
    )?;
    for (_, spec, k) in apis(specs, Kind::Response) {
        let runs = throttle_offset_runs(spec);
        if runs.is_empty() {
            continue;
        }
        writeln!(out, "        {k} => match version {{")?;
        for (a, b, o) in runs {
            writeln!(out, "            {a}..={b} => Some({o}),")?;
        }
        writeln!(out, "            _ => None,\n        }},")?;
    }
    writeln!(out, "        _ => None,\n    }}\n}}\n")
}

fn validate_request(out: &mut String, specs: &[(String, Spec)]) -> fmt::Result {
    writeln!(
        out,
        "/// Decodes the body of request `api_key` at `version` and drops it, requiring that it\n/// consumes `buf` exactly. Used by the robustness tests and the fuzz target; the broker's\n/// dispatch decodes into the typed messages directly."
    )?;
    writeln!(
        out,
        "pub fn validate_request(api_key: i16, version: i16, buf: &mut Bytes) -> Result<(), DecodeError> {{\n    match api_key {{"
    )?;
    for (m, spec, k) in apis(specs, Kind::Request) {
        let t = format!("{m}::{}", spec.name);
        writeln!(
            out,
            "        {k} => {{\n            if version < {t}::MIN_VERSION || version > {t}::MAX_VERSION {{\n                return Err(DecodeError::UnsupportedVersion {{ api_key, version }});\n            }}\n            {t}::decode(buf, version)?;\n        }}"
        )?;
    }
    writeln!(
        out,
        "        _ => return Err(DecodeError::UnknownApiKey(api_key)),\n    }}"
    )?;
    writeln!(
        out,
        "    if buf.is_empty() {{ Ok(()) }} else {{ Err(DecodeError::TrailingBytes(buf.len())) }}\n}}\n"
    )
}

fn visit_all(out: &mut String, specs: &[(String, Spec)]) -> fmt::Result {
    writeln!(
        out,
        "/// Calls `v.visit::<T>(..)` for every top-level message of this folder."
    )?;
    writeln!(out, "#[cfg(test)]")?;
    writeln!(
        out,
        "pub(crate) fn visit_all(v: &mut impl crate::protocol::tests::support::Visitor) {{"
    )?;
    for (m, spec) in specs {
        if spec.versions.is_empty() {
            continue;
        }
        writeln!(
            out,
            "    v.visit::<{m}::{}>({:?}, {:?}, {}, {}, {});",
            spec.name,
            spec.name,
            spec.kind.as_str(),
            spec.api_key.unwrap_or(-1),
            spec.versions.min,
            spec.versions.max
        )?;
    }
    writeln!(out, "}}\n")
}

fn visit_kafka_protocol_pairs(out: &mut String, specs: &[(String, Spec)]) -> fmt::Result {
    writeln!(
        out,
        "/// Calls `v.visit::<Ours, Theirs>(..)` for every message `kafka-protocol` also defines."
    )?;
    writeln!(out, "#[cfg(test)]")?;
    writeln!(
        out,
        "pub(crate) fn visit_kafka_protocol_pairs(v: &mut impl crate::protocol::tests::support::PairVisitor) {{"
    )?;
    for (m, spec) in specs {
        if spec.versions.is_empty() || !kafka_protocol::defines(m) {
            continue;
        }
        let (km, kn) = kafka_protocol::name(m, &spec.name);
        writeln!(
            out,
            "    v.visit::<{m}::{n}, kafka_protocol::messages::{km}::{kn}>({n:?}, {:?}, {}, {});",
            spec.kind.as_str(),
            spec.versions.min,
            spec.versions.max,
            n = spec.name,
        )?;
    }
    writeln!(out, "}}\n")
}

fn visit_kafka_protocol_apis(out: &mut String, specs: &[(String, Spec)]) -> fmt::Result {
    writeln!(
        out,
        "/// Calls `v.visit::<Request, Response>(api_key, min, max)` with `kafka-protocol`'s types\n/// for every API both sides define (header-version checks)."
    )?;
    writeln!(out, "#[cfg(test)]")?;
    writeln!(
        out,
        "pub(crate) fn visit_kafka_protocol_apis(v: &mut impl crate::protocol::tests::support::ApiVisitor) {{"
    )?;
    for (m, spec, k) in apis(specs, Kind::Request) {
        let resp_m = m.replace("_request", "_response");
        let Some((_, resp)) = specs.iter().find(|(rm, _)| *rm == resp_m) else {
            continue;
        };
        if spec.versions.is_empty() || !kafka_protocol::defines(m) {
            continue;
        }
        let (km, kn) = kafka_protocol::name(m, &spec.name);
        let (krm, krn) = kafka_protocol::name(&resp_m, &resp.name);
        writeln!(
            out,
            "    v.visit::<kafka_protocol::messages::{km}::{kn}, kafka_protocol::messages::{krm}::{krn}>({k}, {}, {});",
            spec.versions.min, spec.versions.max
        )?;
    }
    writeln!(out, "}}\n")
}
