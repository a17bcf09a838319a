//! Multi-document YAML (Kubernetes manifests) and JSON with the lines each
//! value sits on: the parser keeps no spans, so a key's line is found in
//! the document's text, occurrence by occurrence.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value as Json};
use serde_yaml::Value;

use super::{BadInput, File};

/// One document of a multi-document YAML file.
#[derive(Debug, Clone)]
pub struct Doc<'a> {
    /// The file it is in.
    pub file: &'a str,
    /// Its first line in the file (1-based).
    pub start: usize,
    /// Its lines.
    pub lines: Vec<&'a str>,
    /// Its value.
    pub value: Value,
}

impl Doc<'_> {
    /// `kind:` (empty when absent).
    pub fn kind(&self) -> &str {
        self.value.get("kind").and_then(Value::as_str).unwrap_or("")
    }

    /// A document of a kind the importer does not read: counted by kind
    /// in `skipped`; one with no `kind:` at all is refused as not `what`
    /// (e.g. "a Kubernetes object"), saying what the importer `reads`.
    pub fn not_read(
        &self,
        skipped: &mut BTreeMap<String, usize>,
        what: &str,
        reads: &str,
    ) -> Result<(), BadInput> {
        match self.kind() {
            "" => Err(BadInput::at(
                self.file,
                self.start,
                format!("not {what}: no `kind:` ({reads})"),
            )),
            other => {
                *skipped.entry(other.to_string()).or_default() += 1;
                Ok(())
            }
        }
    }

    /// `spec:`, the map a Kubernetes object's settings are in; a
    /// document without one is refused, at its first line.
    pub fn spec(&self) -> Result<&serde_yaml::Mapping, BadInput> {
        self.value
            .get("spec")
            .and_then(Value::as_mapping)
            .ok_or_else(|| {
                BadInput::at(
                    self.file,
                    self.start,
                    format!("{} {}: no `spec:` map", self.kind(), self.name()),
                )
            })
    }

    /// `metadata.name` (empty when absent).
    pub fn name(&self) -> &str {
        self.value
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// `metadata.namespace`, when set.
    pub fn namespace(&self) -> Option<&str> {
        self.value
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
    }

    /// The file line of the `nth` (0-based) line in the document holding
    /// `key:` as a key (block or flow style); the document's first line
    /// when there are fewer.
    pub fn line_of(&self, key: &str, nth: usize) -> usize {
        let block = format!("{key}:");
        let flow = [
            format!("{{ {key}:"),
            format!("{{{key}:"),
            format!(", {key}:"),
        ];
        self.lines
            .iter()
            .enumerate()
            .filter(|(_, l)| {
                let t = l.trim_start().trim_start_matches("- ");
                t.starts_with(&block) || flow.iter().any(|f| l.contains(f.as_str()))
            })
            .nth(nth)
            .map_or(self.start, |(i, _)| self.start + i)
    }

    /// The file line of the first line at or after `from` (a file line)
    /// holding `key:`; `from` when none does.
    pub fn line_after(&self, from: usize, key: &str) -> usize {
        let block = format!("{key}:");
        let skip = from.saturating_sub(self.start);
        self.lines
            .iter()
            .enumerate()
            .skip(skip)
            .find(|(_, l)| l.trim_start().trim_start_matches("- ").starts_with(&block))
            .map_or(from, |(i, _)| self.start + i)
    }
}

/// The documents of `f` (separated by `---` lines), empty ones left out;
/// a `List` (as `kubectl get -o yaml` writes) gives its `items`.
pub fn documents(f: &File) -> Result<Vec<Doc<'_>>, BadInput> {
    let mut docs = vec![];
    let mut start = 1;
    let mut lines: Vec<&str> = vec![];
    for (i, l) in f.text.lines().enumerate() {
        if l.trim_end() == "---" || l.starts_with("--- ") {
            flush(f, start, std::mem::take(&mut lines), &mut docs)?;
            start = i + 2;
        } else {
            lines.push(l);
        }
    }
    flush(f, start, lines, &mut docs)?;
    Ok(docs)
}

fn flush<'a>(
    f: &'a File,
    start: usize,
    lines: Vec<&'a str>,
    docs: &mut Vec<Doc<'a>>,
) -> Result<(), BadInput> {
    let text = lines.join("\n");
    if !crate::yaml::has_content(&text) {
        return Ok(());
    }
    let value: Value = serde_yaml::from_str(&text).map_err(|e| {
        let line = e.location().map_or(0, |l| l.line().saturating_sub(1));
        BadInput::at(
            &f.name,
            start + line,
            format!("not YAML: {}", first_line(&e.to_string())),
        )
    })?;
    if !value.is_mapping() {
        return Err(BadInput::at(
            &f.name,
            start,
            "a document here is not a map (a Kubernetes object or a list of them)",
        ));
    }
    if value.get("kind").and_then(Value::as_str) == Some("List") {
        for item in value
            .get("items")
            .and_then(Value::as_sequence)
            .into_iter()
            .flatten()
        {
            docs.push(Doc {
                file: &f.name,
                start,
                lines: lines.clone(),
                value: item.clone(),
            });
        }
        return Ok(());
    }
    docs.push(Doc {
        file: &f.name,
        start,
        lines,
        value,
    });
    Ok(())
}

/// The first line of a parser's message.
pub fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// The 1-based line of the `nth` (0-based) occurrence of `"key"` in JSON
/// `text`; 1 when there are fewer.
pub fn json_line_of(text: &str, key: &str, nth: usize) -> usize {
    let needle = format!("\"{key}\"");
    text.match_indices(&needle)
        .nth(nth)
        .map_or(1, |(i, _)| text[..i].matches('\n').count() + 1)
}

/// Parses JSON `text` of file `name`, naming the line of a mistake.
pub fn json(name: &str, text: &str, what: &str) -> Result<serde_json::Value, BadInput> {
    serde_json::from_str(text).map_err(|e| BadInput::at(name, e.line(), format!("not {what}: {e}")))
}

/// The line of each key of a parsed JSON document: the keys are walked in
/// the text's order (serde_json keeps it), each counted with the equal
/// strings before it, so [`json_line_of`]'s `nth` finds its very line.
pub struct Lines<'a> {
    text: &'a str,
    nth: HashMap<(usize, String), usize>,
}

impl<'a> Lines<'a> {
    /// Indexes `root`, parsed from `text`.
    pub fn new(text: &'a str, root: &Json) -> Lines<'a> {
        fn walk(
            v: &Json,
            counts: &mut HashMap<String, usize>,
            nth: &mut HashMap<(usize, String), usize>,
        ) {
            match v {
                Json::Object(m) => {
                    for (k, x) in m {
                        let c = counts.entry(k.clone()).or_default();
                        nth.insert((m as *const Map<String, Json> as usize, k.clone()), *c);
                        *c += 1;
                        walk(x, counts, nth);
                    }
                }
                Json::Array(a) => a.iter().for_each(|x| walk(x, counts, nth)),
                Json::String(s) => *counts.entry(s.clone()).or_default() += 1,
                _ => {}
            }
        }
        let mut nth = HashMap::new();
        walk(root, &mut HashMap::new(), &mut nth);
        Lines { text, nth }
    }

    /// The line of `key` in object `obj` (its first line's when absent).
    pub fn of(&self, obj: &Map<String, Json>, key: &str) -> usize {
        let k = (obj as *const Map<String, Json> as usize, key.to_string());
        match self.nth.get(&k) {
            Some(&i) => json_line_of(self.text, key, i),
            None => obj
                .keys()
                .next()
                .map_or(1, |first| self.of(obj, first).saturating_sub(1).max(1)),
        }
    }
}

/// A number: plain, in a string, or a wrapper's `{ "value": n }`.
pub fn num(v: Option<&Json>) -> Option<f64> {
    match v? {
        Json::Number(x) => x.as_f64(),
        Json::String(t) => t.trim().parse().ok(),
        Json::Object(o) => num(o.get("value")),
        _ => None,
    }
}

/// A protobuf Duration: `"0.025s"`, or `{ "seconds", "nanos" }`.
pub fn proto_duration(v: &Json) -> Option<std::time::Duration> {
    match v {
        Json::String(t) => duration(t),
        Json::Object(o) => {
            let secs =
                num(o.get("seconds")).unwrap_or(0.0) + num(o.get("nanos")).unwrap_or(0.0) / 1e9;
            (secs.is_finite() && secs >= 0.0).then(|| std::time::Duration::from_secs_f64(secs))
        }
        _ => None,
    }
}

/// A duration in the proxies' words: `2s`, `250ms`, `1.5s`, `1m`, `1h`
/// (Istio, Gateway API, Linkerd), or a protobuf Duration's `"0.1s"`.
pub fn duration(v: &str) -> Option<std::time::Duration> {
    let v = v.trim();
    let (num, unit) = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or((v, ""), |i| v.split_at(i));
    let x: f64 = num.parse().ok()?;
    if !x.is_finite() || x < 0.0 {
        return None;
    }
    let secs = match unit {
        "ms" => x / 1000.0,
        "s" => x,
        "m" => x * 60.0,
        "h" => x * 3600.0,
        "us" | "µs" => x / 1e6,
        _ => return None,
    };
    Some(std::time::Duration::from_secs_f64(secs))
}

/// A duration as the lab writes it: whole milliseconds, `250ms`.
pub fn lab_duration(d: std::time::Duration) -> Value {
    Value::String(format!("{}ms", d.as_millis().max(1)))
}
