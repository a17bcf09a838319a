//! YAML: the one module that reads it, for topologies and scenarios alike.
//!
//! Two reasons for a module of its own:
//!
//! - **One place for the YAML crate.** The parser, `serde_yaml` 0.9, is
//!   deprecated upstream but chosen on purpose; no other module names it.
//!   Replacing it later is a change to this file alone: [`from_str`],
//!   [`Value`] and the error positions are all that depend on it.
//! - **One set of messages.** A topology and a scenario check the same
//!   kinds of values (a rate, requests per second, a status, a duration),
//!   name near misses and find lines the same way, so a mistake reads the
//!   same whichever file it is in.
//!
//! What is here:
//!
//! - [`from_str`]: text → any serde type, or an [`Error`] that says where
//!   ([`Location`]: file, line and column) and what; [`bounds`] holds the
//!   limits it checks first, so no text makes the parser slow.
//! - [`Value`]: YAML kept as written, to be read later (a topology's
//!   `scenario:` key).
//! - Scalars for `#[serde(deserialize_with = "...")]`: [`rate`], [`rps`],
//!   [`capacity`], [`non_negative`], [`status`], [`duration`], and the
//!   building blocks [`number`], [`whole`] and [`parse_duration`]. They
//!   check a value while the parser still knows where it is, so the error
//!   points at the value, and they say what a value of the wrong kind
//!   (`~`, `true`, a word) should have been.
//! - [`did_you_mean`]: the name meant by a near miss.
//! - [`Lines`] and [`key_of`]: lines in the text, for mistakes found after
//!   parsing (an unknown service, a step after the end). The parser keeps
//!   no spans, so they are found by looking at the text.
//!
//! ```
//! use chaoslab_model::yaml;
//!
//! #[derive(Debug, serde::Deserialize)]
//! struct Fault {
//!     #[serde(default, deserialize_with = "yaml::rate")]
//!     error_rate: Option<f64>,
//! }
//!
//! let f: Fault = yaml::from_str("error_rate: 0.5\n", "f.yaml").unwrap();
//! assert_eq!(f.error_rate, Some(0.5));
//! let e = yaml::from_str::<Fault>("error_rate: 1.5\n", "f.yaml").unwrap_err();
//! assert_eq!(
//!     e.to_string(),
//!     "f.yaml:1:13: error_rate: error_rate must be a rate between 0 and 1 (e.g. 0.1 for 10%), got 1.5"
//! );
//! let e = yaml::from_str::<Fault>("error_rate: ~\n", "f.yaml").unwrap_err();
//! assert!(e.message.ends_with("needs a rate between 0 and 1, but nothing is given"));
//! ```

pub mod bounds;

use std::fmt;
use std::ops::Range;
use std::time::Duration;

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};

/// A YAML value kept as written, to be deserialized later (a topology's
/// `scenario:` key).
pub type Value = serde_yaml::Value;

// ---------------------------------------------------------------------------
// Parsing and where things are.

/// Where in a file something is: the file, and the line and column when
/// they are known (both 1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file, as the user named it.
    pub file: String,
    /// 1-based line.
    pub line: Option<u32>,
    /// 1-based column.
    pub column: Option<u32>,
}

impl Location {
    /// The file alone, without a line.
    pub fn in_file(file: &str) -> Location {
        Location {
            file: file.to_string(),
            line: None,
            column: None,
        }
    }

    /// The 0-based `line` index and byte `column` of the text, as a
    /// 1-based position.
    pub fn at(file: &str, line: usize, column: usize) -> Location {
        Location {
            file: file.to_string(),
            line: Some(saturate(line.saturating_add(1))),
            column: Some(saturate(column.saturating_add(1))),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        Ok(())
    }
}

/// Anything the parser refused: YAML syntax, a value of the wrong type or
/// out of range, an unknown or missing field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {message}")]
pub struct Error {
    /// Where the parser says (the file alone when it cannot say).
    pub at: Location,
    /// What is wrong, with the YAML path (`services.D.fault.error_rate: `)
    /// when there is one, and without the position (that is `at`).
    pub message: String,
}

/// Deserializes YAML text; `origin` names it in errors. The text is
/// first held to [`bounds`]' limits (flow nesting, values once aliases
/// expand), so any text is answered in time linear in its length.
pub fn from_str<T: DeserializeOwned>(text: &str, origin: &str) -> Result<T, Error> {
    let scan = bounds::scan(text, origin)?;
    if scan.aliases > 0 {
        bounds::check_expansion(text, origin, &scan)?;
    }
    serde_yaml::from_str(text).map_err(|e| located(&e, origin))
}

fn located(e: &serde_yaml::Error, origin: &str) -> Error {
    let loc = e.location();
    let mut message = e.to_string();
    if let Some(l) = &loc {
        // The position goes in front, as file:line:col; drop the parser's copy.
        let suffix = format!(" at line {} column {}", l.line(), l.column());
        message = message.replacen(&suffix, "", 1);
    }
    Error {
        at: Location {
            file: origin.to_string(),
            line: loc.as_ref().map(|l| saturate(l.line())),
            column: loc.as_ref().map(|l| saturate(l.column())),
        },
        message,
    }
}

/// Whether the text holds anything but blank lines, comments and document
/// markers (`---`, `...`).
pub fn has_content(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim();
        !(l.is_empty() || l.starts_with('#') || l == "---" || l == "...")
    })
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

// ---------------------------------------------------------------------------
// Scalars checked where they are written.

/// A visitor for one number, checked by `check` while the parser still
/// knows where the number is, so an error points at it.
struct Number<T> {
    expecting: &'static str,
    other: &'static str,
    check: fn(f64) -> Result<T, String>,
}

impl<'de, T> Visitor<'de> for Number<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        (self.check)(v).map_err(E::custom)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        self.visit_f64(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        self.visit_f64(v as f64)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Err(E::custom(format!("{}, not `{v}`", self.other)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Err(E::custom(format!("{}, but nothing is given", self.other)))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        Err(E::custom(format!("{}, not `{v}`", self.other)))
    }
}

/// One number, checked by `check` at the scalar. `expecting` completes
/// "expected …" for the parser's own messages; `other` is what is said
/// when something that is not a number is given (`~`, `true`, a word): it
/// gets `, not `word`` or `, but nothing is given` appended.
pub fn number<'de, D: Deserializer<'de>, T>(
    d: D,
    expecting: &'static str,
    other: &'static str,
    check: fn(f64) -> Result<T, String>,
) -> Result<Option<T>, D::Error> {
    d.deserialize_any(Number {
        expecting,
        other,
        check,
    })
    .map(Some)
}

/// `v` as a whole number from `lo` to `hi`; `what` names it in the error.
pub fn whole(v: f64, lo: u32, hi: u32, what: &str) -> Result<u32, String> {
    if v.is_finite() && v.fract() == 0.0 && v >= f64::from(lo) && v <= f64::from(hi) {
        Ok(v as u32)
    } else {
        Err(format!(
            "{what} must be a whole number from {lo} to {hi}, got {v}"
        ))
    }
}

/// `error_rate:` a rate from 0 to 1.
pub fn rate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    number(
        d,
        "a rate between 0 and 1",
        "error_rate needs a rate between 0 and 1",
        |v| {
            if (0.0..=1.0).contains(&v) {
                Ok(v)
            } else {
                Err(format!(
                    "error_rate must be a rate between 0 and 1 (e.g. 0.1 for 10%), got {v}"
                ))
            }
        },
    )
}

const PER_SECOND: &str = "a positive number of requests per second";

/// The highest entry rate the lab takes: the load generator schedules
/// each root request as an arrival of its own, a whole number of
/// nanoseconds after the one before, on one task; at a microsecond apart
/// the schedule's own work is the bottleneck, not the fleet (rates the
/// machine cannot carry below it are flagged saturated instead).
pub const MAX_RPS: f64 = 1_000_000.0;

/// A number in a message, short however large: `-5`, `0.25`, `1.0e12`.
/// (As `format::fmt_rate` prints it; written here so the parser
/// needs nothing above it.)
fn short(v: f64) -> String {
    if v.is_finite() && v.abs() >= 100_000.0 {
        format!("{v:.1e}")
    } else {
        format!("{v}")
    }
}

fn per_second(v: f64, what: &str) -> Result<f64, String> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!(
            "{what} must be a positive, finite number of requests per second, got {}",
            short(v)
        ))
    }
}

/// An entry rate: [`per_second`], and at most [`MAX_RPS`].
pub fn entry_rate(v: f64, what: &str) -> Result<f64, String> {
    let v = per_second(v, what)?;
    if v > MAX_RPS {
        return Err(format!(
            "{what} {}: the load generator schedules at most {} root requests per second (one arrival a microsecond)",
            short(v),
            short(MAX_RPS)
        ));
    }
    Ok(v)
}

/// `rps:` a positive, finite number of requests per second.
pub fn rps<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    number(
        d,
        PER_SECOND,
        "rps needs a positive number of requests per second",
        |v| entry_rate(v, "rps"),
    )
}

/// `capacity:` a positive, finite number of requests per second.
pub fn capacity<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    number(
        d,
        PER_SECOND,
        "capacity needs a positive number of requests per second",
        |v| per_second(v, "capacity"),
    )
}

/// A finite number of 0 or more.
pub fn non_negative<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    number(
        d,
        "a number of 0 or more",
        "needs a number of 0 or more",
        |v| {
            if v.is_finite() && v >= 0.0 {
                Ok(v)
            } else {
                Err(format!("must be a finite number of 0 or more, got {v}"))
            }
        },
    )
}

/// `status:` an HTTP status code, 100 to 599.
pub fn status<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
    number(
        d,
        "an HTTP status code",
        "status needs an HTTP status code",
        |v| whole(v, 100, 599, "status").map(|s| s as u16),
    )
}

/// A duration: a string such as `250ms` or `1.5s`, or a number of
/// seconds (see [`parse_duration`]).
pub fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Duration;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a duration such as 250ms, 10s or 1.5s")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
            parse_duration(v).map_err(E::custom)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
            parse_duration(&v.to_string()).map_err(E::custom)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
            parse_duration(&v.to_string()).map_err(E::custom)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
            Ok(Duration::from_secs(v))
        }
    }
    d.deserialize_any(V).map(Some)
}

/// Parses a duration as the YAML and the command line write it: `250ms`,
/// `10s`, `1.5s`, `2m`, `1h`, `500us`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (write e.g. 250ms, 10s, 2m)"))?;
    if !value.is_finite() {
        return Err(format!("`{s}` is not a finite duration"));
    }
    if value < 0.0 {
        return Err(format!("`{s}` is negative: a duration must be 0 or more"));
    }
    let secs = match unit.trim() {
        "" | "s" | "sec" | "secs" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "ns" => value / 1e9,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "`{s}` has an unknown unit `{other}` (use ns, us, ms, s, m or h)"
            ))
        }
    };
    Duration::try_from_secs_f64(secs).map_err(|_| format!("`{s}` is too long a duration"))
}

// ---------------------------------------------------------------------------
// Names.

/// The candidate `name` most likely meant, if one is close enough: a few
/// letters apart (ignoring case; a swap of two neighbours counts as one),
/// at most a third of the shorter name. Ties go to the earlier candidate.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, c)| {
            let len = c.chars().count().min(name.chars().count());
            *d <= (len / 3).max(1) && *d < len
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Edits (insert, delete, replace, swap neighbours) from `a` to `b`,
/// ignoring ASCII case; `usize::MAX` when they are too far apart in length
/// (or too long) to be worth counting.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > 3 || a.len() > 64 || b.len() > 64 {
        return usize::MAX;
    }
    let same = |x: char, y: char| x.eq_ignore_ascii_case(&y);
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(!same(ca, cb));
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
            if i > 0 && j > 0 && same(ca, b[j - 1]) && same(a[i - 1], cb) {
                cur[j + 1] = cur[j + 1].min(before[j - 1] + 1);
            }
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

// ---------------------------------------------------------------------------
// Lines in the text, for mistakes found after parsing.

/// YAML text as lines, for finding where something is written once it has
/// been parsed (the parser keeps no spans). Block style is understood:
/// keys, the blocks under them and their entries; flow style (`{ … }`,
/// `[ … ]`) is searched as text, word by word.
///
/// Line numbers here are 0-based indices; [`Lines::at`] turns them into a
/// 1-based [`Location`].
#[derive(Debug, Clone)]
pub struct Lines<'a> {
    file: &'a str,
    lines: Vec<&'a str>,
}

impl<'a> Lines<'a> {
    /// `text`, from the file named `file`.
    pub fn new(text: &'a str, file: &'a str) -> Lines<'a> {
        Lines {
            file,
            lines: text.lines().collect(),
        }
    }

    /// The file's name.
    pub fn file(&self) -> &'a str {
        self.file
    }

    /// How many lines there are.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Line `i` (empty past the end).
    pub fn line(&self, i: usize) -> &'a str {
        self.lines.get(i).copied().unwrap_or("")
    }

    /// The file alone, without a line.
    pub fn whole_file(&self) -> Location {
        Location::in_file(self.file)
    }

    /// Line `line`, byte `column` (both 0-based).
    pub fn at(&self, line: usize, column: usize) -> Location {
        Location::at(self.file, line, column)
    }

    /// Line `i`'s indentation, in bytes.
    pub fn indent(&self, i: usize) -> usize {
        let l = self.line(i);
        l.len() - l.trim_start().len()
    }

    /// Whether line `i` is a list item (`- …`).
    pub fn is_item(&self, i: usize) -> bool {
        self.line(i).trim_start().starts_with('-')
    }

    /// The block under the key on line `k`: the following lines up to the
    /// first one (blank lines and comments aside) indented no deeper than
    /// `k`, except a `- ` item at `k`'s own indentation, which YAML allows
    /// for a list. Empty when the key's value is on its own line.
    pub fn block(&self, k: usize) -> Range<usize> {
        let key = self.indent(k);
        let end = (k + 1..self.len())
            .find(|&i| {
                !blank(self.line(i))
                    && (self.indent(i) < key || (self.indent(i) == key && !self.is_item(i)))
            })
            .unwrap_or(self.len());
        (k + 1).min(end)..end
    }

    /// The first line of each entry of the lines `range` (a block, or the
    /// whole text): the lines at the indentation of the first one, blank
    /// lines and comments aside.
    pub fn entries(&self, range: Range<usize>) -> Vec<usize> {
        let mut indent = None;
        range
            .filter(|&i| !blank(self.line(i)))
            .filter(|&i| *indent.get_or_insert(self.indent(i)) == self.indent(i))
            .collect()
    }

    /// The line of `key:` among the entries of `range` (list items aside).
    pub fn find_key(&self, range: Range<usize>, key: &str) -> Option<usize> {
        self.entries(range)
            .into_iter()
            .find(|&i| !self.is_item(i) && key_of(self.line(i)) == Some(key))
    }

    /// Where `token` first stands as a whole word (a name, not part of a
    /// longer one; comments aside) in the lines `range`, looking from byte
    /// `skip` on its first line.
    pub fn find(&self, range: Range<usize>, token: &str, skip: usize) -> Option<Location> {
        let first = range.start;
        range.into_iter().find_map(|i| {
            let from = if i == first { skip } else { 0 };
            find_token(self.line(i), token, from).map(|col| self.at(i, col))
        })
    }

    /// The first place `key:` stands as a key anywhere in the text, block
    /// or flow style (at the start of a line, or after `{` or `,`).
    pub fn key(&self, key: &str) -> Option<Location> {
        let pattern = format!("{key}:");
        self.lines.iter().enumerate().find_map(|(i, l)| {
            let col = find_token(l, &pattern, 0)?;
            let before = l[..col].trim_end().chars().next_back();
            matches!(before, None | Some('{' | ',')).then(|| self.at(i, col))
        })
    }
}

/// The key of a `key: value` line (or of a `- key: value` item), quotes
/// removed; `None` when the line is not one.
pub fn key_of(line: &str) -> Option<&str> {
    let mut t = line.trim_start();
    while let Some(rest) = t.strip_prefix("- ") {
        t = rest.trim_start();
    }
    if let Some(q) = t.chars().next().filter(|c| *c == '"' || *c == '\'') {
        let rest = &t[1..];
        let end = rest.find(q)?;
        return Some(&rest[..end]);
    }
    let bytes = t.as_bytes();
    let colon = (0..bytes.len())
        .find(|&i| bytes[i] == b':' && bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace()))?;
    Some(t[..colon].trim_end())
}

/// A blank line or a comment.
fn blank(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// Column of `token` as a whole word in `line` before any comment, at or
/// after byte `from`.
fn find_token(line: &str, token: &str, from: usize) -> Option<usize> {
    if token.is_empty() {
        return None;
    }
    let code = if line.trim_start().starts_with('#') {
        ""
    } else {
        line.split(" #").next().unwrap_or(line)
    };
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-' || c == '.';
    let mut start = from.min(code.len());
    while let Some(pos) = code.get(start..)?.find(token) {
        let at = start + pos;
        let before = code[..at].chars().next_back();
        let after = code[at + token.len()..].chars().next();
        if !before.is_some_and(word) && !after.is_some_and(word) {
            return Some(at);
        }
        start = at + token.len();
    }
    None
}

#[cfg(test)]
mod tests;
