//! `ssl.principal.mapping.rules`, with the syntax and results of Kafka's `SslPrincipalMapper`:
//! a comma-separated list of `DEFAULT` (the distinguished name as it is) and
//! `RULE:pattern/replacement/[L|U]` (when the pattern matches the whole name, the name with
//! the pattern replaced, then lower- or upper-cased); the first rule that applies wins, and
//! a name no rule applies to fails authentication. `/` and `\` are escaped with `\` inside
//! a rule; empty entries are skipped.
use std::fmt;

use regex::Regex;

/// One rule entry, as Kafka's splitter and parser find it (capture groups: 1 `DEFAULT`,
/// 2 the pattern, 4 the replacement, 6 the case flag, 7 anything else).
const RULE: &str = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingError(pub String);

impl fmt::Display for MappingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Replace {
        /// The pattern as written (for Display).
        source: String,
        /// The pattern anchored at both ends: a rule applies only when the whole name matches.
        whole: Regex,
        pattern: Regex,
        /// The replacement as written, and in the `regex` crate's syntax.
        replacement_source: String,
        replacement: String,
        lower: bool,
        upper: bool,
    },
}

#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
}

impl PrincipalMapper {
    /// Parses `ssl.principal.mapping.rules`; an error names the rule it could not read.
    pub fn parse(rules: &str) -> Result<PrincipalMapper, MappingError> {
        let splitter = Regex::new(&format!(r"\s*({RULE})\s*(,\s*|$)")).expect("valid");
        let parser = Regex::new(&format!(r"\A(?:{RULE})")).expect("valid");
        let mut parsed = Vec::new();
        for caps in splitter.captures_iter(rules.trim()) {
            let entry = caps.get(1).map_or("", |m| m.as_str());
            let Some(m) = parser.captures(entry) else {
                return Err(MappingError(format!("Invalid rule: {entry}")));
            };
            let end = m.get(0).map_or(0, |g| g.end());
            if end != entry.len() {
                return Err(MappingError(format!(
                    "Invalid rule: `{entry}`, unmatched substring: `{}`",
                    &entry[end..]
                )));
            }
            if m.get(1).is_some() {
                parsed.push(Rule::Default);
            } else if let Some(pattern) = m.get(2) {
                let source = pattern.as_str().to_string();
                let compile = |re: &str| {
                    Regex::new(re).map_err(|e| {
                        MappingError(format!(
                            "Invalid rule: {entry}: bad pattern {source:?}: {e}"
                        ))
                    })
                };
                let pattern = compile(&source)?;
                let whole = compile(&format!(r"\A(?:{source})\z"))?;
                let replacement_source = m.get(4).map_or("", |g| g.as_str()).to_string();
                let flag = m.get(6).map_or("", |g| g.as_str());
                let replacement = java_replacement(&replacement_source, pattern.captures_len() - 1);
                parsed.push(Rule::Replace {
                    source,
                    whole,
                    pattern,
                    replacement_source,
                    replacement,
                    lower: flag == "L",
                    upper: flag == "U",
                });
            }
            // Anything else matched the empty alternative: an empty entry, skipped.
        }
        Ok(PrincipalMapper { rules: parsed })
    }

    /// The principal name for a distinguished name (RFC 2253 form).
    pub fn name(&self, distinguished_name: &str) -> Result<String, MappingError> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(distinguished_name.to_string()),
                Rule::Replace {
                    whole,
                    pattern,
                    replacement,
                    lower,
                    upper,
                    ..
                } => {
                    if !whole.is_match(distinguished_name) {
                        continue;
                    }
                    let mut name = pattern
                        .replace_all(distinguished_name, replacement.as_str())
                        .into_owned();
                    if *lower {
                        name = name.to_lowercase();
                    } else if *upper {
                        name = name.to_uppercase();
                    }
                    return Ok(name);
                }
            }
        }
        Err(MappingError(format!(
            "No rules apply to {distinguished_name}, rules {self}"
        )))
    }
}

impl fmt::Display for PrincipalMapper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, rule) in self.rules.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match rule {
                Rule::Default => f.write_str("DEFAULT")?,
                Rule::Replace {
                    source,
                    replacement_source,
                    lower,
                    upper,
                    ..
                } => {
                    write!(f, "RULE:{source}/{replacement_source}")?;
                    if *lower {
                        f.write_str("/L")?;
                    } else if *upper {
                        f.write_str("/U")?;
                    }
                }
            }
        }
        f.write_str("]")
    }
}

/// A replacement in Java's `Matcher.replaceAll` syntax, rewritten for the `regex` crate:
/// `\c` is the character c, `$n` the longest group number (starting with n's first digit)
/// the pattern has. A reference to a group the pattern lacks stays literal text, as
/// Kafka's rule does (it escapes such references before replacing).
fn java_replacement(java: &str, groups: usize) -> String {
    let mut out = String::with_capacity(java.len() + 8);
    let chars: Vec<char> = java.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                push_literal(&mut out, chars[i + 1]);
                i += 2;
            }
            '$' if i + 1 < chars.len() && chars[i + 1].is_ascii_digit() => {
                let first = chars[i + 1].to_digit(10).unwrap_or(0) as usize;
                if first > groups {
                    out.push_str("$$");
                    i += 1;
                    continue;
                }
                let mut group = first;
                let mut j = i + 2;
                while j < chars.len() {
                    let Some(d) = chars[j].to_digit(10) else {
                        break;
                    };
                    let next = group * 10 + d as usize;
                    if next > groups {
                        break;
                    }
                    group = next;
                    j += 1;
                }
                out.push_str(&format!("${{{group}}}"));
                i = j;
            }
            c => {
                push_literal(&mut out, c);
                i += 1;
            }
        }
    }
    out
}

fn push_literal(out: &mut String, c: char) {
    if c == '$' {
        out.push_str("$$");
    } else {
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> String {
        PrincipalMapper::parse(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .to_string()
    }

    #[test]
    fn kafka_documented_rules_parse_and_bad_ones_do_not() {
        for ok in [
            "DEFAULT",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
            "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
            "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
            "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        ] {
            rules(ok);
        }
        for bad in [
            "default",
            "DEFAUL",
            "DEFAULT/L",
            "DEFAULT/U",
            "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
            "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
        ] {
            assert!(PrincipalMapper::parse(bad).is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn rules_map_names_as_kafka_documents() {
        let mapper = PrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, \
             RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, \
             RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, \
             RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, DEFAULT",
        )
        .unwrap();
        let cases = [
            ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"),
            ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
            ("cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"),
            ("cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"),
            (
                "OU=JavaSoft,O=Sun Microsystems,C=US",
                "OU=JavaSoft,O=Sun Microsystems,C=US",
            ),
        ];
        for (dn, name) in cases {
            assert_eq!(mapper.name(dn).unwrap(), name, "{dn}");
        }
        // An escaped comma inside a CN, matched by an escaped backslash in the rule.
        let mapper = PrincipalMapper::parse(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT").unwrap();
        assert_eq!(
            mapper
                .name(r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz")
                .unwrap(),
            r"Tkac\, Adam"
        );
    }

    #[test]
    fn a_name_no_rule_applies_to_is_an_error() {
        let mapper = PrincipalMapper::parse("RULE:^CN=(.*)$/$1/").unwrap();
        assert_eq!(mapper.name("CN=a").unwrap(), "a");
        let e = mapper.name("O=x").unwrap_err();
        assert!(e.0.contains("No rules apply to O=x"), "{e}");
        // No rules at all: nothing applies.
        assert!(PrincipalMapper::parse("").unwrap().name("CN=a").is_err());
    }

    #[test]
    fn rules_split_as_kafka_splits_them() {
        let cases = [
            ("", "[]"),
            ("DEFAULT", "[DEFAULT]"),
            ("RULE://", "[RULE:/]"),
            ("RULE:/.*/", "[RULE:/.*]"),
            ("RULE:/.*/L", "[RULE:/.*/L]"),
            ("RULE://,DEFAULT", "[RULE:/, DEFAULT]"),
            ("  RULE:// ,  DEFAULT  ", "[RULE:/, DEFAULT]"),
            (
                "  RULE:   /     / ,  DEFAULT  ",
                "[RULE:   /     , DEFAULT]",
            ),
            (
                "  RULE:  /     /U   ,DEFAULT  ",
                "[RULE:  /     /U, DEFAULT]",
            ),
            (
                "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
                "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
            ),
            (",   , , ,      , , ,   ", "[]"),
            (",,RULE://,,,DEFAULT,,", "[RULE:/, DEFAULT]"),
            (
                ",  , RULE: /   /    ,,,   DEFAULT, ,   ",
                "[RULE: /   , DEFAULT]",
            ),
            (
                "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,",
                "[RULE:   /  /U, DEFAULT]",
            ),
            (
                r"RULE:\**\/+/*/L,RULE:\/*\**/**/",
                r"[RULE:\**\/+/*/L, RULE:\/*\**/**]",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(rules(text), expected, "{text:?}");
        }
    }

    #[test]
    fn replacements_follow_java_group_references() {
        // Two groups: `$12` is group 1 then a literal 2; `$3` is no group, so literal.
        assert_eq!(java_replacement("$1@$2", 2), "${1}@${2}");
        assert_eq!(java_replacement("$12", 2), "${1}2");
        assert_eq!(java_replacement("$3", 2), "$$3");
        assert_eq!(java_replacement(r"a\$b\\", 2), r"a$$b\");
        assert_eq!(java_replacement("$12", 12), "${12}");
    }
}
