//! The generated, test-only (`#[cfg(test)]` in the including crate) `Sample` impl of a struct:
//! a deterministic random value for a version, for the round-trip and differential tests in
//! `src/protocol/tests/`. It fills exactly the fields the version carries, uses `None` only
//! where the version allows null, leaves tagged fields at their default half of the time (so
//! both the omitted and the written case are exercised), and sometimes adds unknown tagged
//! fields.

use std::fmt::{self, Write as _};

use crate::model::{ident, Field, Ty};

/// `top_data`: the struct is the top level of a `data` spec, whose `version` field (if any)
/// must hold the schema version.
pub fn emit_impl(
    o: &mut String,
    name: &str,
    fields: &[Field],
    flex: bool,
    flexible_test: &str,
    top_data: bool,
) -> fmt::Result {
    writeln!(o, "#[cfg(test)]")?;
    writeln!(
        o,
        "impl crate::protocol::tests::support::Sample for {name} {{"
    )?;
    writeln!(
        o,
        "    fn sample(rng: &mut crate::protocol::tests::support::TestRng, version: i16) -> Self {{"
    )?;
    writeln!(o, "        #[allow(unused_imports)]\n        use crate::protocol::tests::support::Sample as _;")?;
    writeln!(o, "        let flexible = {flexible_test};")?;
    writeln!(o, "        let _ = flexible;")?;
    writeln!(o, "        let mut this = Self::default();")?;
    for f in fields {
        let regular = f.regular_range();
        let tagged = f.tagged_range();
        if regular.is_empty() && tagged.is_empty() {
            continue;
        }
        let value = if top_data && f.name == "version" && matches!(f.ty, Ty::I16) {
            // The `version` field of KRaft control records (LeaderChangeMessage, VotersRecord,
            // ...) carries the schema version itself; readers, kafka-protocol among them, rely
            // on it, so a random value would not be a valid message.
            "version".to_string()
        } else {
            sample_value(&f.ty)
        };
        let expr = if f.nullable_anywhere() {
            format!(
                "if {} && rng.below(4) == 0 {{ None }} else {{ Some({value}) }}",
                f.nullable.test()
            )
        } else {
            value
        };
        writeln!(o, "        if {} || {} {{", regular.test(), tagged.test())?;
        writeln!(
            o,
            "            if !({} && rng.below(2) == 0) {{",
            tagged.test()
        )?;
        writeln!(o, "                this.{} = {expr};", ident(&f.name))?;
        writeln!(o, "            }}")?;
        writeln!(o, "        }}")?;
    }
    if flex {
        writeln!(o, "        if flexible && rng.below(8) == 0 {{")?;
        writeln!(
            o,
            "            this.unknown_tagged_fields = rng.unknown_tagged_fields();"
        )?;
        writeln!(o, "        }}")?;
    }
    writeln!(o, "        this")?;
    writeln!(o, "    }}")?;
    writeln!(o, "}}\n")
}

/// Expression producing one random value of `ty` (uses `rng` and `version`).
fn sample_value(ty: &Ty) -> String {
    match ty {
        Ty::Bool => "rng.bool()".into(),
        Ty::I8 => "(rng.next_u64() as i8)".into(),
        Ty::I16 => "(rng.next_u64() as i16)".into(),
        Ty::U16 => "(rng.next_u64() as u16)".into(),
        Ty::I32 => "(rng.next_u64() as i32)".into(),
        Ty::I64 => "(rng.next_u64() as i64)".into(),
        Ty::F64 => "rng.f64()".into(),
        Ty::Str => "rng.string()".into(),
        Ty::Bytes | Ty::Records => "rng.bytes()".into(),
        Ty::Uuid => "rng.uuid()".into(),
        Ty::Array(inner) => format!(
            "{{ let n = rng.below(4); let mut v = Vec::with_capacity(n); for _ in 0..n {{ v.push({}); }} v }}",
            sample_value(inner)
        ),
        Ty::Struct(n) => format!("<{n}>::sample(rng, version)"),
    }
}
