//! Limits checked before a document is deserialized, so that any input
//! is answered in time linear in its size.
//!
//! Two shapes of YAML make the parser itself slow, whatever the types
//! being read:
//!
//! - **Deep flow nesting** (`[[[[…]]]]`): the scanner behind `serde_yaml`
//!   rechecks every open bracket on every token, so its time grows with
//!   the square of the depth (100,000 brackets took 45 s). The text is
//!   scanned first (quotes, comments and block scalars understood) and a
//!   document nested more than [`MAX_FLOW_DEPTH`] brackets deep is refused
//!   at the bracket that goes too deep. Nothing real comes close: the
//!   deserializer refuses 128 levels of any nesting anyway.
//! - **Aliases** (`*L`): each one replays the anchored value, so a 71 KB
//!   file of `calls: *L` lines expanded to 2 million edges. When the scan
//!   finds an alias, the document is walked once with a counter that stops
//!   at [`MAX_VALUES`] (about what a 1 MB file holds written out); a
//!   document that expands past it is refused at its first alias.
//!
//! ```
//! use chaoslab_model::yaml;
//!
//! let deep = format!("a: {}{}\n", "[".repeat(100), "]".repeat(100));
//! let e = yaml::from_str::<yaml::Value>(&deep, "d.yaml").unwrap_err();
//! assert!(e.to_string().starts_with("d.yaml:1:68: "), "{e}");
//! assert!(e.message.contains("nested more than 64"), "{e}");
//! ```

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{Error, Location};

/// The deepest flow nesting (`[` and `{` inside one another) accepted.
pub const MAX_FLOW_DEPTH: usize = 64;

/// The most values (scalars, lists and maps) a document with aliases may
/// expand to: about what a 1 MB file holds written out, two bytes a value.
pub const MAX_VALUES: usize = 500_000;

/// What the scan found that needs a second look.
#[derive(Debug, Default)]
pub(super) struct Scan {
    /// How many aliases (`*name`) the text holds.
    pub aliases: usize,
    /// The first alias: its name and where it is.
    pub first_alias: Option<(String, Location)>,
}

/// Scans `text` once: refuses flow nesting deeper than [`MAX_FLOW_DEPTH`],
/// and counts aliases. Linear in the text.
pub(super) fn scan(text: &str, origin: &str) -> Result<Scan, Error> {
    let mut out = Scan::default();
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    // Lines of a block scalar (`key: |`) are skipped while indented deeper
    // than the line that opened it.
    let mut block_scalar: Option<usize> = None;
    for (ln, line) in text.split('\n').enumerate() {
        let bytes = line.as_bytes();
        let indent = bytes.iter().take_while(|&&b| b == b' ').count();
        if let Some(open) = block_scalar {
            if quote.is_none() && (indent > open || line.trim().is_empty()) {
                continue;
            }
            block_scalar = None;
        }
        // The last byte before `i` that is not a space, on this line, and
        // the first byte of the word it ends (an anchor `&a` or a tag `!t`
        // comes before a value as `key:` does).
        let mut last: Option<u8> = None;
        let mut word: Option<u8> = None;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if let Some(q) = quote {
                if q == b'"' && b == b'\\' {
                    i += 2;
                    continue;
                }
                if b == q {
                    if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    quote = None;
                }
                i += 1;
                continue;
            }
            let spaced = i == 0 || matches!(bytes[i - 1], b' ' | b'\t');
            // Where a new value may begin: in a flow collection after a
            // space or an indicator; in block style only at the start of a
            // line or after `key:`, `-` or `?` (elsewhere `[`, `'`, `*`
            // are letters of a plain scalar such as a description).
            let starts = if depth > 0 {
                spaced || matches!(bytes[i - 1], b'[' | b'{' | b',' | b':')
            } else {
                spaced
                    && (matches!(last, None | Some(b':' | b'-' | b'?'))
                        || matches!(word, Some(b'&' | b'!')))
            };
            match b {
                b'#' if spaced => break,
                b'"' | b'\'' if starts => quote = Some(b),
                b'[' | b'{' if starts || depth > 0 => {
                    depth += 1;
                    if depth > MAX_FLOW_DEPTH {
                        return Err(Error {
                            at: Location::at(origin, ln, i),
                            message: format!(
                                "lists and maps are nested more than {MAX_FLOW_DEPTH} deep here; a topology or scenario needs a few levels"
                            ),
                        });
                    }
                }
                b']' | b'}' if depth > 0 => depth -= 1,
                b'*' if starts => {
                    out.aliases += 1;
                    if out.first_alias.is_none() {
                        let name: String = line[i + 1..]
                            .chars()
                            .take_while(|c| !c.is_whitespace() && !",[]{}".contains(*c))
                            .take(64)
                            .collect();
                        out.first_alias = Some((name, Location::at(origin, ln, i)));
                    }
                }
                b'|' | b'>' if depth == 0 && starts => {
                    block_scalar = Some(indent);
                    break;
                }
                _ => {}
            }
            if b != b' ' && b != b'\t' {
                if spaced {
                    word = Some(b);
                }
                last = Some(b);
            }
            i += 1;
        }
    }
    Ok(out)
}

/// Walks the document as the deserializer will (aliases expanded) and
/// refuses it once it holds more than [`MAX_VALUES`] values. Run only when
/// [`scan`] found aliases: without them the text bounds the values.
pub(super) fn check_expansion(text: &str, origin: &str, scan: &Scan) -> Result<(), Error> {
    let count = Cell::new(0usize);
    let walked = Count(&count).deserialize(serde_yaml::Deserializer::from_str(text));
    if count.get() <= MAX_VALUES {
        // Any other mistake is the real parse's to report, with its path.
        let _ = walked;
        return Ok(());
    }
    let (name, at) = scan
        .first_alias
        .clone()
        .unwrap_or_else(|| (String::new(), Location::in_file(origin)));
    Err(Error {
        at,
        message: format!(
            "aliases expand this file to more than {MAX_VALUES} values (`*{name}` here is the first of {} aliases): write the repeated parts out, or repeat them less",
            scan.aliases
        ),
    })
}

/// Counts values into the cell; fails once there are too many.
#[derive(Clone, Copy)]
struct Count<'a>(&'a Cell<usize>);

impl Count<'_> {
    fn one<E: de::Error>(&self) -> Result<(), E> {
        let n = self.0.get() + 1;
        self.0.set(n);
        if n > MAX_VALUES {
            return Err(E::custom("too many values"));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.one()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.one()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.one()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.one()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.one()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.one()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.one()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.deserialize(d)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.deserialize(d)
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        self.one()?;
        let (_, v) = data.variant_seed(self)?;
        de::VariantAccess::newtype_variant_seed(v, self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.one()?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.one()?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_error(text: &str) -> Option<String> {
        scan(text, "x.yaml").err().map(|e| e.to_string())
    }

    #[test]
    fn flow_depth_is_counted_outside_quotes_comments_and_plain_text() {
        let deep = |n: usize| format!("a: {}{}\n", "[".repeat(n), "]".repeat(n));
        assert_eq!(depth_error(&deep(MAX_FLOW_DEPTH)), None);
        let e = depth_error(&deep(MAX_FLOW_DEPTH + 1)).unwrap();
        assert!(e.starts_with("x.yaml:1:68: "), "{e}");
        // Brackets that are not flow collections do not count.
        let many = MAX_FLOW_DEPTH + 5;
        let quoted = format!("a: \"{}\"\nb: '{}'\n", "[".repeat(many), "{".repeat(many));
        assert_eq!(depth_error(&quoted), None);
        let plain = format!("description: see {}\n", "[".repeat(many));
        assert_eq!(depth_error(&plain), None);
        let comment = format!("a: 1 # {}\n", "[".repeat(many));
        assert_eq!(depth_error(&comment), None);
        let block = format!("d: |\n  {}\n  x\nb: [1]\n", "[".repeat(many));
        assert_eq!(depth_error(&block), None);
        // After an anchor or a tag a value still begins.
        let anchored = format!("a: &x {}\n", "[".repeat(many));
        assert!(depth_error(&anchored).is_some());
        // A quote inside a word is a letter, not the start of a string.
        let text = format!("d: it's [{}]\n", "[".repeat(many));
        assert_eq!(depth_error(&text), None);
        let text = format!("a: ['it''s', \"\\\"\", {}]\n", "[".repeat(many));
        assert!(depth_error(&text).is_some());
    }

    #[test]
    fn aliases_are_counted_where_they_can_stand() {
        let s = scan("a: &L [x]\nb: *L\nc: [*L, *L]\nd: 2 * 3\n", "x.yaml").unwrap();
        assert_eq!(s.aliases, 3);
        let (name, at) = s.first_alias.unwrap();
        assert_eq!(
            (name.as_str(), at.to_string().as_str()),
            ("L", "x.yaml:2:4")
        );
        assert_eq!(scan("a: 1\n", "x.yaml").unwrap().aliases, 0);
    }

    #[test]
    fn expansion_is_capped() {
        let list: Vec<String> = (0..1000).map(|i| format!("s{i}")).collect();
        let mut text = format!("a: &L [{}]\n", list.join(", "));
        for i in 0..600 {
            text += &format!("b{i}: *L\n");
        }
        let s = scan(&text, "x.yaml").unwrap();
        let e = check_expansion(&text, "x.yaml", &s).unwrap_err();
        assert_eq!(e.at.to_string(), "x.yaml:2:5");
        assert!(e.message.contains("first of 600 aliases"), "{e}");
        let small = "a: &L [x, y]\nb: *L\n";
        assert_eq!(
            check_expansion(small, "x.yaml", &scan(small, "x.yaml").unwrap()),
            Ok(())
        );
    }
}
