//! The generated `Decode` impl of a struct: positional fields in the versions that carry them
//! (compact lengths in flexible versions, nulls only in nullable versions), then, in flexible
//! versions, the tagged-field section (KIP-482): known tags into their fields, unknown ones
//! kept in `unknown_tagged_fields` so the struct re-encodes byte for byte.

use std::fmt::{self, Write as _};

use crate::model::{ident, Field, Ty};

pub fn emit_impl(
    o: &mut String,
    name: &str,
    fields: &[Field],
    flex: bool,
    flexible_test: &str,
) -> fmt::Result {
    writeln!(o, "impl Decode for {name} {{")?;
    writeln!(
        o,
        "    fn decode(buf: &mut Bytes, version: i16) -> Result<Self, DecodeError> {{"
    )?;
    writeln!(o, "        let flexible = {flexible_test};")?;
    writeln!(o, "        let _ = flexible;")?;
    writeln!(o, "        let mut this = Self::default();")?;
    for f in fields {
        let regular = f.regular_range();
        if regular.is_empty() {
            continue;
        }
        writeln!(o, "        if {} {{", regular.test())?;
        writeln!(
            o,
            "            this.{} = {};",
            ident(&f.name),
            decode_expr(f, "flexible")
        )?;
        writeln!(o, "        }}")?;
    }
    if flex {
        writeln!(o, "        if flexible {{")?;
        writeln!(o, "            let count = read_uvarint(buf)?;")?;
        writeln!(o, "            for _ in 0..count {{")?;
        writeln!(o, "                let tag = read_uvarint(buf)?;")?;
        writeln!(o, "                let size = read_uvarint(buf)? as usize;")?;
        writeln!(o, "                let mut data = take_bytes(buf, size)?;")?;
        writeln!(o, "                let _ = &mut data;")?;
        writeln!(o, "                match tag {{")?;
        for f in fields {
            if let Some((tag, _)) = f.tag {
                writeln!(
                    o,
                    "                    {tag} if {} => {{",
                    f.tagged_range().test()
                )?;
                // A tagged field's value is always in its flexible encoding.
                writeln!(
                    o,
                    "                        this.{} = {{ let buf = &mut data; {} }};",
                    ident(&f.name),
                    decode_expr(f, "true")
                )?;
                writeln!(o, "                    }}")?;
            }
        }
        writeln!(
            o,
            "                    _ => this.unknown_tagged_fields.push(RawTaggedField {{ tag, data }}),"
        )?;
        writeln!(o, "                }}")?;
        writeln!(o, "            }}")?;
        writeln!(o, "        }}")?;
    }
    writeln!(o, "        Ok(this)")?;
    writeln!(o, "    }}")?;
    writeln!(o, "}}\n")
}

/// Expression decoding field `f`; `flex` is the Rust expression saying whether the version
/// is flexible.
fn decode_expr(f: &Field, flex: &str) -> String {
    if f.nullable_anywhere() {
        // An `Option` in every version, but null on the wire only in its nullable versions.
        let n = decode_value(&f.ty, true, flex);
        let nn = decode_value(&f.ty, false, flex);
        format!("if {} {{ {n} }} else {{ Some({nn}) }}", f.nullable.test())
    } else {
        decode_value(&f.ty, false, flex)
    }
}

/// Expression decoding one value of type `ty` from `buf`.
fn decode_value(ty: &Ty, nullable: bool, flex: &str) -> String {
    match ty {
        Ty::Bool => "read_bool(buf)?".into(),
        Ty::I8 => "read_i8(buf)?".into(),
        Ty::I16 => "read_i16(buf)?".into(),
        Ty::U16 => "read_u16(buf)?".into(),
        Ty::I32 => "read_i32(buf)?".into(),
        Ty::I64 => "read_i64(buf)?".into(),
        Ty::F64 => "read_f64(buf)?".into(),
        Ty::Uuid => "read_uuid(buf)?".into(),
        Ty::Str => {
            if nullable {
                format!("read_nullable_string(buf, {flex})?")
            } else {
                format!("read_string(buf, {flex})?")
            }
        }
        Ty::Bytes | Ty::Records => {
            if nullable {
                format!("read_nullable_bytes(buf, {flex})?")
            } else {
                format!("read_bytes(buf, {flex})?")
            }
        }
        Ty::Array(inner) => {
            let elem = decode_value(inner, false, flex);
            if nullable {
                format!("read_nullable_array(buf, {flex}, |buf| Ok({elem}))?")
            } else {
                format!("read_array(buf, {flex}, |buf| Ok({elem}))?")
            }
        }
        Ty::Struct(n) => {
            if nullable {
                format!("read_nullable_struct::<{n}>(buf, version)?")
            } else {
                format!("{n}::decode(buf, version)?")
            }
        }
    }
}
