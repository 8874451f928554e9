//! The generated `Encode` impl of a struct: the mirror of `decode`. Positional fields in the
//! versions that carry them; a null outside a field's nullable versions is written as the empty
//! value rather than panicking; in flexible versions, tagged fields only when they differ from
//! their default (KIP-482), which `write_tagged_fields` merges in tag order with the unknown
//! ones kept from decoding.

use std::fmt::{self, Write as _};

use crate::model::{ident, Field, Ty};

pub fn emit_impl(
    o: &mut String,
    name: &str,
    fields: &[Field],
    flex: bool,
    flexible_test: &str,
) -> fmt::Result {
    writeln!(o, "impl Encode for {name} {{")?;
    writeln!(
        o,
        "    fn encode(&self, buf: &mut BytesMut, version: i16) {{"
    )?;
    writeln!(o, "        let flexible = {flexible_test};")?;
    writeln!(o, "        let _ = flexible;")?;
    for f in fields {
        let regular = f.regular_range();
        if regular.is_empty() {
            continue;
        }
        writeln!(o, "        if {} {{", regular.test())?;
        writeln!(
            o,
            "            {}",
            encode_stmt(f, &format!("self.{}", ident(&f.name)), "flexible")
        )?;
        writeln!(o, "        }}")?;
    }
    if flex {
        writeln!(o, "        if flexible {{")?;
        writeln!(
            o,
            "            let mut tagged: Vec<(u32, BytesMut)> = Vec::new();"
        )?;
        for f in fields {
            if let Some((tag, _)) = f.tag {
                writeln!(
                    o,
                    "            if {} && self.{} != {} {{",
                    f.tagged_range().test(),
                    ident(&f.name),
                    f.typed_default()
                )?;
                writeln!(o, "                let mut b = BytesMut::new();")?;
                writeln!(
                    o,
                    "                {{ let buf = &mut b; {} }}",
                    encode_stmt(f, &format!("self.{}", ident(&f.name)), "true")
                )?;
                writeln!(o, "                tagged.push(({tag}, b));")?;
                writeln!(o, "            }}")?;
            }
        }
        writeln!(
            o,
            "            write_tagged_fields(buf, tagged, &self.unknown_tagged_fields);"
        )?;
        writeln!(o, "        }}")?;
    }
    writeln!(o, "    }}")?;
    writeln!(o, "}}\n")
}

/// Statement writing field `f`, held in the Rust place `v`.
fn encode_stmt(f: &Field, v: &str, flex: &str) -> String {
    if f.nullable_anywhere() {
        let n = encode_value(&f.ty, v, true, flex);
        // Outside its nullable versions a null is written as the empty value.
        let nn = encode_value(&f.ty, "inner", false, flex);
        let empty = match f.ty {
            Ty::Struct(_) => format!("{}::default()", f.ty.rust()),
            _ => "Default::default()".into(),
        };
        format!(
            "if {} {{ {n} }} else {{ let empty: {} = {empty}; let inner = {v}.as_ref().unwrap_or(&empty); let inner = inner.clone(); {nn} }}",
            f.nullable.test(),
            f.ty.rust(),
        )
    } else {
        encode_value(&f.ty, v, false, flex)
    }
}

/// Statement writing one value of type `ty` held in `v`.
fn encode_value(ty: &Ty, v: &str, nullable: bool, flex: &str) -> String {
    match ty {
        Ty::Bool => format!("write_bool(buf, {v});"),
        Ty::I8 => format!("buf.put_i8({v});"),
        Ty::I16 => format!("buf.put_i16({v});"),
        Ty::U16 => format!("buf.put_u16({v});"),
        Ty::I32 => format!("buf.put_i32({v});"),
        Ty::I64 => format!("buf.put_i64({v});"),
        Ty::F64 => format!("buf.put_f64({v});"),
        Ty::Uuid => format!("buf.put_slice({v}.as_bytes());"),
        Ty::Str => {
            if nullable {
                format!("write_nullable_string(buf, {v}.as_deref(), {flex});")
            } else {
                format!("write_string(buf, &{v}, {flex});")
            }
        }
        Ty::Bytes | Ty::Records => {
            if nullable {
                format!("write_nullable_bytes(buf, {v}.as_deref(), {flex});")
            } else {
                format!("write_bytes(buf, &{v}, {flex});")
            }
        }
        Ty::Array(inner) => {
            // Struct elements are encoded through the reference; primitives are copied out.
            let elem = if inner.is_struct() {
                encode_value(inner, "e", false, flex)
            } else {
                encode_value(inner, "(*e)", false, flex)
            };
            if nullable {
                format!(
                    "match &{v} {{ None => write_array_len(buf, -1, {flex}), Some(a) => {{ write_array_len(buf, a.len() as i32, {flex}); for e in a.iter() {{ {elem} }} }} }}"
                )
            } else {
                format!(
                    "{{ write_array_len(buf, {v}.len() as i32, {flex}); for e in {v}.iter() {{ {elem} }} }}"
                )
            }
        }
        Ty::Struct(_) => {
            if nullable {
                format!("match &{v} {{ None => buf.put_i8(-1), Some(s) => {{ buf.put_i8(1); s.encode(buf, version); }} }}")
            } else {
                format!("{v}.encode(buf, version);")
            }
        }
    }
}
