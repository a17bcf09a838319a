//! Reading JSON so that a mistake names its place: the path inside the
//! document (`data[3].callCount`) and what was found there. Every JSON
//! format reads through these.

use serde_json::Value;

pub(super) fn json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("line {}, column {}: not JSON: {e}", e.line(), e.column()))
}

/// What a value is, for a message.
pub(super) fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a map".into(),
    }
}

pub(super) fn field<'a>(v: &'a Value, key: &str, at: &str) -> Result<&'a Value, String> {
    v.get(key)
        .ok_or_else(|| format!("{at}: no `{key}` (found the keys {})", keys(v)))
}

pub(super) fn keys(v: &Value) -> String {
    match v.as_object() {
        Some(m) if !m.is_empty() => m
            .keys()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", "),
        _ => "none".into(),
    }
}

pub(super) fn string<'a>(v: &'a Value, key: &str, at: &str) -> Result<&'a str, String> {
    named(v, key, at, "a service name")
}

/// A non-empty string `key` of `v`; `what` says what it names.
pub(super) fn named<'a>(v: &'a Value, key: &str, at: &str, what: &str) -> Result<&'a str, String> {
    let s = field(v, key, at)?;
    s.as_str()
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| format!("{at}.{key}: expected {what}, found {}", kind(s)))
}

/// A count: a number ≥ 0 (or, where `strings`, a number in a string).
pub(super) fn count(v: &Value, at: &str, strings: bool) -> Result<f64, String> {
    let n = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if strings => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match n {
        Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!(
            "{at}: expected a {}number ≥ 0, found {}",
            if strings { "" } else { "JSON " },
            kind(v)
        )),
    }
}
