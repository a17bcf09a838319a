//! The manifests' YAML: [`serde_json::Value`]s written as block YAML that
//! every reader of it sees the same way.
//!
//! Three parsers read these files: kubectl's (Go, YAML 1.1 booleans such
//! as `on` and `y`), PyYAML's in `kubernetes-validate` (YAML 1.1) and
//! serde_yaml's in the tests (YAML 1.2). A string is written plain only
//! when it means the same text in all three (a letter, `/` or `--` and a
//! letter first, then letters, digits and `._/:=-`, not ending in `:`,
//! not one of the 1.1 words); every other
//! string is double-quoted with every character a parser could read
//! differently escaped: control characters, DEL, the C1 range (U+0085 is
//! a line break in YAML 1.1), U+2028/U+2029, the byte-order mark and the
//! non-characters U+FFFE/U+FFFF. So the topology file in the ConfigMap
//! keeps its bytes exactly: tabs, trailing spaces, a missing final
//! newline and any UTF-8.
//!
//! ```
//! use chaoslab::k8s::emit::quoted;
//!
//! assert_eq!(quoted("a:\tb \n"), r#""a:\tb \n""#);
//! ```

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// One YAML document (without the `---` line) for `v`, a map or a list.
pub fn document(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => map(m, 0, &mut out),
        Value::Array(a) if !a.is_empty() => seq(a, 0, &mut out),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

/// Documents, each after a `---` line.
pub fn stream<'a>(docs: impl IntoIterator<Item = &'a Value>) -> String {
    let mut out = String::new();
    for d in docs {
        out.push_str("---\n");
        out.push_str(&document(d));
    }
    out
}

fn pad(indent: usize, out: &mut String) {
    out.extend(std::iter::repeat_n(' ', indent));
}

fn map(m: &Map<String, Value>, indent: usize, out: &mut String) {
    for (k, v) in m {
        pad(indent, out);
        out.push_str(&string(k));
        out.push(':');
        match v {
            Value::Object(m) if !m.is_empty() => {
                out.push('\n');
                map(m, indent + 2, out);
            }
            Value::Array(a) if !a.is_empty() => {
                out.push('\n');
                seq(a, indent + 2, out);
            }
            other => {
                out.push(' ');
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

fn seq(a: &[Value], indent: usize, out: &mut String) {
    for v in a {
        pad(indent, out);
        out.push_str("- ");
        // A nested block starts on the item's line: write it two deeper,
        // then drop the indent of its first line.
        let mut inner = String::new();
        match v {
            Value::Object(m) if !m.is_empty() => map(m, indent + 2, &mut inner),
            Value::Array(a) if !a.is_empty() => seq(a, indent + 2, &mut inner),
            other => {
                out.push_str(&scalar(other));
                out.push('\n');
                continue;
            }
        }
        out.push_str(&inner[indent + 2..]);
    }
}

/// A scalar, or an empty map or list, on one line.
fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
    }
}

/// `s` plain when every YAML reader takes it as this very string, else
/// [`quoted`].
pub fn string(s: &str) -> String {
    if is_plain(s) {
        s.to_string()
    } else {
        quoted(s)
    }
}

/// Words YAML 1.1 reads as booleans or null (compared without case).
const WORDS: [&str; 9] = ["y", "n", "yes", "no", "on", "off", "true", "false", "null"];

fn is_plain(s: &str) -> bool {
    let b = s.as_bytes();
    // A long flag (`--peer`) is plain too: `-` then a non-space is no
    // list item.
    let flag = b.len() > 2 && b.starts_with(b"--") && b[2].is_ascii_alphabetic();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'/' || flag)
        && b[b.len() - 1] != b':'
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || b"._/:=-".contains(&c))
        && !WORDS.iter().any(|w| w.eq_ignore_ascii_case(s))
}

/// `s` as a double-quoted YAML scalar that reads back to exactly `s`.
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0'..='\u{1f}' | '\u{7f}'..='\u{9f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn back(yaml: &str) -> Value {
        serde_yaml::from_str(yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"))
    }

    #[test]
    fn documents_read_back_to_the_same_value() {
        let v = json!({
            "apiVersion": "apps/v1",
            "metadata": { "name": "a", "labels": { "app.kubernetes.io/name": "chaoslab" }, "annotations": {} },
            "spec": {
                "replicas": 3,
                "args": ["node", "/etc/chaoslab/topology.yaml", "--peer", "B=http://b:8080/", "0.0.0.0:8080"],
                "ports": [{ "name": "http", "containerPort": 8080 }, { "name": "metrics", "containerPort": 9090 }],
                "nested": [[1, 2], [], {}, [{ "a": null }]],
                "flags": [true, false, "true", "on", "Y", "NO", "Null", "~", "1e3", "0x1f", "1:20", "100m", ""],
                "odd keys": { "a: b": "#c", "- d": "[e]", "{f}": "&g *h !i |j >k %l @m `n" },
            }
        });
        let text = document(&v);
        assert_eq!(back(&text), v, "{text}");
        assert!(text.contains("\n  replicas: 3\n"), "{text}");
        assert!(text.contains("- --peer\n"), "{text}");
        assert!(text.contains("- B=http://b:8080/\n"), "{text}");
        assert!(
            text.contains("- \"on\"\n") && text.contains("- \"100m\"\n"),
            "{text}"
        );
    }

    #[test]
    fn awkward_strings_keep_every_byte() {
        for s in [
            "name: t\nservices:\n  A:\t{}\n",
            "trailing spaces   \n  \n",
            "no final newline",
            "  leading",
            "ünïcödé 日本 🦀",
            "\r\n windows\r\n",
            "nul \0 bell \x07 del \x7f",
            "c1 \u{80} nel \u{85} \u{9f}",
            "seps \u{2028} \u{2029} bom \u{feff} nonchars \u{fffe} \u{ffff}",
            "quotes \" ' \\ \\n",
            "",
            "\n",
            " ",
        ] {
            let v = json!({ "data": { "topology.yaml": s } });
            let text = document(&v);
            assert_eq!(back(&text), v, "{s:?}\n{text}");
            assert_eq!(text.lines().count(), 2, "one line per key: {text}");
        }
    }

    #[test]
    fn plain_only_when_unambiguous() {
        for p in [
            "a",
            "chaoslab",
            "/healthz",
            "--peer",
            "B=http://b:8080/",
            "app.kubernetes.io/name",
            "IfNotPresent",
        ] {
            assert_eq!(string(p), p);
        }
        for q in [
            "on", "Off", "y", "TRUE", "null", "8080", "100m", "-x", "--", "---", "--1", "- x",
            ".inf", "a b", "a:", "", "é",
        ] {
            assert!(string(q).starts_with('"'), "{q}");
        }
    }

    #[test]
    fn a_stream_separates_documents() {
        let s = stream([&json!({ "a": 1 }), &json!({ "b": [] })]);
        assert_eq!(s, "---\na: 1\n---\nb: []\n");
    }
}
