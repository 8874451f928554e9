//! A certificate subject as the RFC 2253 string Java's `X500Principal.getName()` gives, which
//! is what Kafka's `ssl.principal.mapping.rules` match against: the relative names from the
//! last to the first, joined by `,` (no spaces); the attributes of one relative name joined
//! by `+`; RFC 2253's keywords (CN, C, L, ST, O, OU, STREET, DC, UID) and the dotted OID
//! with `#` and the value's DER in hex for any other attribute (an e-mail address, for one).
use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::x509::{AttributeTypeAndValue, X509Name};

/// The subject of a DER certificate in RFC 2253 form; None when the DER does not parse.
pub fn subject_rfc2253(cert_der: &[u8]) -> Option<String> {
    let (_, cert) = X509Certificate::from_der(cert_der).ok()?;
    Some(name_rfc2253(cert.subject()))
}

pub fn name_rfc2253(name: &X509Name<'_>) -> String {
    let rdns: Vec<String> = name
        .iter()
        .map(|rdn| {
            rdn.iter()
                .map(attribute_rfc2253)
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect();
    rdns.into_iter().rev().collect::<Vec<_>>().join(",")
}

fn keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.9" => "STREET",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

fn attribute_rfc2253(attr: &AttributeTypeAndValue<'_>) -> String {
    let oid = attr.attr_type().to_id_string();
    match (keyword(&oid), attr.as_str()) {
        (Some(k), Ok(value)) => format!("{k}={}", escape(value)),
        (k, _) => {
            // Not a keyword, or a value that is not a string: the value's DER in hex.
            let value = attr.attr_value();
            let mut der = Vec::with_capacity(value.data.len() + 4);
            let header = &value.header;
            let mut tag = header.tag().0 as u8 & 0x1f;
            tag |= (header.class() as u8) << 6;
            if header.is_constructed() {
                tag |= 0x20;
            }
            der.push(tag);
            let len = value.data.len();
            if len < 0x80 {
                der.push(len as u8);
            } else {
                let bytes: Vec<u8> = len
                    .to_be_bytes()
                    .iter()
                    .copied()
                    .skip_while(|b| *b == 0)
                    .collect();
                der.push(0x80 | bytes.len() as u8);
                der.extend_from_slice(&bytes);
            }
            der.extend_from_slice(value.data);
            let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
            format!("{}=#{hex}", k.map(str::to_string).unwrap_or(oid))
        }
    }
}

/// RFC 2253's escaping: `,+"\<>;` always, `#` and space at the start, space at the end.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 4);
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_rfc_2253() {
        assert_eq!(escape("Tkac, Adam"), r"Tkac\, Adam");
        assert_eq!(escape("#a b "), r"\#a b\ ");
        assert_eq!(escape(r#"a+b"c<d>e;f\"#), r#"a\+b\"c\<d\>e\;f\\"#);
    }

    #[test]
    fn subject_is_written_last_name_first() {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        let mut dn = rcgen::DistinguishedName::new();
        dn.push(rcgen::DnType::CountryName, "US");
        dn.push(rcgen::DnType::OrganizationName, "Acme, Inc");
        dn.push(rcgen::DnType::OrganizationalUnitName, "ServiceUsers");
        dn.push(rcgen::DnType::CommonName, "Duke");
        params.distinguished_name = dn;
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            subject_rfc2253(cert.der()).unwrap(),
            r"CN=Duke,OU=ServiceUsers,O=Acme\, Inc,C=US"
        );
    }
}
