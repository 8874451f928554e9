//! What a spec describes, independent of the line format it is written in: a message (kind,
//! API key, versions, flexible versions), its fields and structs, and the Rust each maps to
//! (type, default value, identifier). The rules for which versions carry a field, and whether
//! positionally or as a tagged field, follow Kafka's message schemas (KIP-482 for tagged fields).

use std::collections::BTreeMap;

use crate::range::Range;

/// What a spec file describes; `data` is a payload that is not an API message (a record of
/// `__consumer_offsets`, the consumer protocol's subscription and assignment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Request,
    Response,
    Data,
}

impl Kind {
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "request" => Some(Kind::Request),
            "response" => Some(Kind::Response),
            "data" => Some(Kind::Data),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Response => "response",
            Kind::Data => "data",
        }
    }
}

/// A field's wire type.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Bool,
    I8,
    I16,
    U16,
    I32,
    I64,
    F64,
    Str,
    Bytes,
    Records,
    Uuid,
    Array(Box<Ty>),
    Struct(String),
}

impl Ty {
    /// Any name that is not a primitive or `[T]` is a struct.
    pub fn parse(s: &str) -> Ty {
        if let Some(inner) = s.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
            return Ty::Array(Box::new(Ty::parse(inner)));
        }
        match s {
            "bool" => Ty::Bool,
            "i8" => Ty::I8,
            "i16" => Ty::I16,
            "u16" => Ty::U16,
            "i32" => Ty::I32,
            "i64" => Ty::I64,
            "f64" => Ty::F64,
            "string" => Ty::Str,
            "bytes" => Ty::Bytes,
            "records" => Ty::Records,
            "uuid" => Ty::Uuid,
            other => Ty::Struct(other.to_string()),
        }
    }

    pub fn rust(&self) -> String {
        match self {
            Ty::Bool => "bool".into(),
            Ty::I8 => "i8".into(),
            Ty::I16 => "i16".into(),
            Ty::U16 => "u16".into(),
            Ty::I32 => "i32".into(),
            Ty::I64 => "i64".into(),
            Ty::F64 => "f64".into(),
            Ty::Str => "String".into(),
            Ty::Bytes | Ty::Records => "Bytes".into(),
            Ty::Uuid => "Uuid".into(),
            Ty::Array(t) => format!("Vec<{}>", t.rust()),
            Ty::Struct(n) => n.clone(),
        }
    }

    pub fn is_struct(&self) -> bool {
        matches!(self, Ty::Struct(_))
    }

    /// The struct a field of this type holds (itself or as array elements): the one its
    /// indented children define.
    pub fn struct_name(&self) -> Option<&str> {
        match self {
            Ty::Struct(n) => Some(n),
            Ty::Array(t) => match &**t {
                Ty::Struct(n) => Some(n),
                _ => None,
            },
            _ => None,
        }
    }

    /// The width of a value that always takes the same number of bytes; `None` for variable ones.
    pub fn fixed_width(&self) -> Option<usize> {
        match self {
            Ty::Bool | Ty::I8 => Some(1),
            Ty::I16 | Ty::U16 => Some(2),
            Ty::I32 => Some(4),
            Ty::I64 | Ty::F64 => Some(8),
            Ty::Uuid => Some(16),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub ty: Ty,
    /// The versions that carry the field at all.
    pub versions: Range,
    /// The versions in which it may be null.
    pub nullable: Range,
    /// Its tag and the versions in which it is a tagged field.
    pub tag: Option<(u32, Range)>,
    /// The spec's `=V`, as written.
    pub default: Option<String>,
    /// The fields of the struct it holds, when that struct is defined at this field.
    pub children: Vec<Field>,
}

impl Field {
    /// A field nullable in any version is an `Option` in every version.
    pub fn nullable_anywhere(&self) -> bool {
        !self.nullable.is_empty()
    }

    pub fn rust_ty(&self) -> String {
        let t = self.ty.rust();
        if self.nullable_anywhere() {
            format!("Option<{t}>")
        } else {
            t
        }
    }

    /// The value the field takes in versions that do not carry it, as a Rust expression.
    pub fn default_expr(&self) -> String {
        let d = self.default.as_deref();
        // `None` is accepted as a spelling of `null` (one records spec uses it); anything else
        // would silently become `Some(Default::default())` and be written when Kafka omits it.
        if d == Some("null") || d == Some("None") {
            return "None".into();
        }
        let inner = match (&self.ty, d) {
            (Ty::Bool, Some(v)) => v.to_string(),
            (Ty::I8 | Ty::I16 | Ty::U16 | Ty::I32 | Ty::I64, Some(v)) => {
                if let Some(hex) = v.strip_prefix("0x") {
                    format!("0x{hex}")
                } else {
                    v.to_string()
                }
            }
            (Ty::F64, Some(v)) => format!("{v}f64"),
            (Ty::Str, Some(v)) => {
                let v = v.trim_matches('"');
                format!("String::from({v:?})")
            }
            _ => "Default::default()".into(),
        };
        if self.nullable_anywhere() {
            format!("Some({inner})")
        } else {
            inner
        }
    }

    /// `default_expr` with the type spelled out, for comparisons (`x != Default::default()`
    /// would not infer).
    pub fn typed_default(&self) -> String {
        let d = self.default_expr();
        if d == "Default::default()" {
            format!("<{}>::default()", self.rust_ty())
        } else {
            d
        }
    }

    /// Versions in which the field is written in the main body (not as a tagged field).
    pub fn regular_range(&self) -> Range {
        match self.tag {
            // A field that is tagged in some versions is positional only below them.
            Some((_, tagged)) => {
                if tagged.min <= self.versions.min {
                    Range::NONE
                } else {
                    Range {
                        min: self.versions.min,
                        max: self.versions.max.min(tagged.min - 1),
                    }
                }
            }
            None => self.versions,
        }
    }

    /// Versions in which the field is carried as a tagged field.
    pub fn tagged_range(&self) -> Range {
        match self.tag {
            Some((_, tagged)) => tagged.intersect(&self.versions),
            None => Range::NONE,
        }
    }
}

/// A `struct` block: a struct shared by several fields, which name it without children. (Its
/// `@range` is informative: each field carries its own versions.)
#[derive(Clone, Debug)]
pub struct SharedStruct {
    pub name: String,
    pub fields: Vec<Field>,
}

#[derive(Clone, Debug)]
pub struct Spec {
    pub kind: Kind,
    /// The message's Rust (and Kafka) name, e.g. `FetchRequest`.
    pub name: String,
    pub api_key: Option<i16>,
    pub versions: Range,
    pub flexible: Range,
    pub fields: Vec<Field>,
    pub structs: Vec<SharedStruct>,
}

impl Spec {
    /// Whether any supported version is flexible: only then do structs keep unknown tags.
    pub fn can_be_flexible(&self) -> bool {
        !self.flexible.intersect(&self.versions).is_empty()
    }

    /// Every struct of the message but the top-level one, by name: those defined at a field
    /// (at any depth) and the shared ones.
    pub fn nested_structs(&self) -> BTreeMap<String, Vec<Field>> {
        fn collect(fields: &[Field], structs: &mut BTreeMap<String, Vec<Field>>) {
            for f in fields {
                if let (false, Some(n)) = (f.children.is_empty(), f.ty.struct_name()) {
                    structs.insert(n.to_string(), f.children.clone());
                    collect(&f.children, structs);
                }
            }
        }
        let mut structs = BTreeMap::new();
        collect(&self.fields, &mut structs);
        for s in &self.structs {
            structs.insert(s.name.clone(), s.fields.clone());
            collect(&s.fields, &mut structs);
        }
        structs
    }
}

/// A field name as a Rust identifier (raw where it is a keyword).
pub fn ident(name: &str) -> String {
    match name {
        "type" | "match" | "ref" | "move" | "static" | "self" | "struct" | "mod" | "use" | "in" => {
            format!("r#{name}")
        }
        _ => name.to_string(),
    }
}

/// `CamelCase` to `snake_case`, keeping acronyms together (`SASLHandshakeRequest` ->
/// `sasl_handshake_request`): how a spec's file is expected to be named after its message.
pub fn snake(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = i + 1 < chars.len() && chars[i + 1].is_lowercase();
            if i > 0 && (prev_lower || (next_lower && chars[i - 1].is_uppercase())) {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(*c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(ty: &str, default: Option<&str>, nullable: &str) -> Field {
        Field {
            name: "f".into(),
            ty: Ty::parse(ty),
            versions: Range::parse("0+").unwrap(),
            nullable: Range::parse(nullable).unwrap(),
            tag: None,
            default: default.map(str::to_string),
            children: vec![],
        }
    }

    #[test]
    fn snake_keeps_acronyms_and_digits_together() {
        assert_eq!(snake("FetchRequest"), "fetch_request");
        assert_eq!(snake("SASLHandshakeRequest"), "sasl_handshake_request");
        assert_eq!(snake("ApiVersionsResponse"), "api_versions_response");
        assert_eq!(snake("Uuid2Key"), "uuid2_key");
    }

    #[test]
    fn keywords_become_raw_identifiers() {
        assert_eq!(ident("type"), "r#type");
        assert_eq!(ident("topic"), "topic");
    }

    #[test]
    fn nullable_fields_are_options_with_their_defaults_inside() {
        let f = field("string", Some("\"x\""), "1+");
        assert_eq!(f.rust_ty(), "Option<String>");
        assert_eq!(f.default_expr(), "Some(String::from(\"x\"))");
        assert_eq!(field("[i32]", Some("null"), "0+").default_expr(), "None");
        assert_eq!(field("i32", Some("None"), "0+").default_expr(), "None");
        assert_eq!(field("i64", Some("-1"), "none").default_expr(), "-1");
        assert_eq!(field("i32", Some("0x10"), "none").default_expr(), "0x10");
        assert_eq!(field("f64", Some("0.5"), "none").default_expr(), "0.5f64");
        assert_eq!(
            field("Topic", None, "none").typed_default(),
            "<Topic>::default()"
        );
    }

    #[test]
    fn a_field_tagged_from_some_version_is_positional_below_it() {
        let mut f = field("i32", None, "none");
        f.tag = Some((0, Range::parse("3+").unwrap()));
        assert_eq!(f.regular_range(), Range { min: 0, max: 2 });
        assert_eq!(
            f.tagged_range(),
            Range {
                min: 3,
                max: i16::MAX
            }
        );
        // Tagged wherever it exists: never positional.
        f.versions = Range::parse("5+").unwrap();
        assert!(f.regular_range().is_empty());
        assert_eq!(
            f.tagged_range(),
            Range {
                min: 5,
                max: i16::MAX
            }
        );
    }

    #[test]
    fn fixed_widths_are_the_wire_sizes() {
        assert_eq!(Ty::parse("i16").fixed_width(), Some(2));
        assert_eq!(Ty::parse("uuid").fixed_width(), Some(16));
        assert_eq!(Ty::parse("string").fixed_width(), None);
        assert_eq!(Ty::parse("[Topic]").struct_name(), Some("Topic"));
        assert_eq!(Ty::parse("[i32]").struct_name(), None);
    }
}
