//! Version ranges as the spec format writes them (`3+`, `0-12`, `5`, `none`) and the Rust
//! boolean expressions the generated code tests a `version` with. They play the part of the
//! `versions`, `flexibleVersions`, `nullableVersions` and `taggedVersions` strings of Kafka's
//! JSON message schemas.

/// An inclusive range of versions; `min > max` is the empty range (`none`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub min: i16,
    pub max: i16,
}

impl Range {
    pub const NONE: Range = Range { min: 1, max: 0 };

    /// Parses `none`, `N+` (N and up), `A-B` or `N`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Range> {
        if s == "none" {
            return Some(Range::NONE);
        }
        if let Some(min) = s.strip_suffix('+') {
            return Some(Range {
                min: min.parse().ok()?,
                max: i16::MAX,
            });
        }
        if let Some((min, max)) = s.split_once('-') {
            return Some(Range {
                min: min.parse().ok()?,
                max: max.parse().ok()?,
            });
        }
        let v = s.parse().ok()?;
        Some(Range { min: v, max: v })
    }

    pub fn is_empty(&self) -> bool {
        self.min > self.max
    }

    pub fn contains(&self, version: i16) -> bool {
        self.min <= version && version <= self.max
    }

    /// A Rust boolean expression testing `version` against this range, as short as the range
    /// allows (the generated code is read when a decode goes wrong).
    pub fn test(&self) -> String {
        if self.is_empty() {
            "false".into()
        } else if self.max == i16::MAX {
            if self.min <= 0 {
                "true".into()
            } else {
                format!("version >= {}", self.min)
            }
        } else if self.min == self.max {
            format!("version == {}", self.min)
        } else {
            format!("(version >= {} && version <= {})", self.min, self.max)
        }
    }

    pub fn intersect(&self, o: &Range) -> Range {
        Range {
            min: self.min.max(o.min),
            max: self.max.min(o.max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Range;

    #[test]
    fn parses_every_spelling() {
        assert_eq!(Range::parse("none"), Some(Range::NONE));
        assert_eq!(
            Range::parse("3+"),
            Some(Range {
                min: 3,
                max: i16::MAX
            })
        );
        assert_eq!(Range::parse("0-12"), Some(Range { min: 0, max: 12 }));
        assert_eq!(Range::parse("5"), Some(Range { min: 5, max: 5 }));
        assert_eq!(Range::parse("x"), None);
        assert_eq!(Range::parse("1-"), None);
    }

    #[test]
    fn tests_are_as_short_as_the_range() {
        let test = |s: &str| Range::parse(s).unwrap().test();
        assert_eq!(test("none"), "false");
        assert_eq!(test("0+"), "true");
        assert_eq!(test("9+"), "version >= 9");
        assert_eq!(test("4"), "version == 4");
        assert_eq!(test("1-3"), "(version >= 1 && version <= 3)");
    }

    #[test]
    fn intersection_of_disjoint_ranges_is_empty() {
        let a = Range::parse("0-2").unwrap();
        assert!(a.intersect(&Range::parse("3+").unwrap()).is_empty());
        assert_eq!(
            a.intersect(&Range::parse("1+").unwrap()),
            Range { min: 1, max: 2 }
        );
        assert!(a.contains(2) && !a.contains(3));
    }
}
