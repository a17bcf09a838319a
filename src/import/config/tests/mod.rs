//! Each format's fixture against a table written from its documentation,
//! its bad input, and the policies written onto a graph.

mod envoy;
mod gateway;
mod grpc;
mod haproxy;
mod istio;
mod linkerd;
mod nginx;

use std::path::Path;

use serde_yaml::{Mapping, Value};

use super::{read, ConfigFormat, File, Read, Rule};

/// Reads `files` (paths from the repository's root) as `format`.
pub(super) fn read_fixture(format: ConfigFormat, files: &[&str]) -> Read {
    let files: Vec<File> = files
        .iter()
        .map(|p| File {
            name: (*p).to_string(),
            text: std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/").to_string() + p)
                .unwrap_or_else(|e| panic!("{p}: {e}")),
        })
        .collect();
    read(format, &files).unwrap_or_else(|e| panic!("{e}"))
}

/// Reads `text` as a file `name` of `format`: the reader's verdict.
pub(super) fn text(format: ConfigFormat, name: &str, text: &str) -> Result<Read, String> {
    read(
        format,
        &[File {
            name: name.into(),
            text: text.into(),
        }],
    )
    .map_err(|e| e.to_string())
}

/// A rule's policy as flow YAML, keys sorted: `{attempts: 5, preset: istio}`.
pub(super) fn flow(m: &serde_yaml::Mapping) -> String {
    let mut keys: Vec<(String, String)> = m
        .iter()
        .map(|(k, v)| {
            let v = serde_json::to_string(
                &serde_yaml::from_value::<serde_json::Value>(v.clone()).unwrap(),
            )
            .unwrap();
            (k.as_str().unwrap().to_string(), v.replace('"', ""))
        })
        .collect();
    keys.sort();
    let parts: Vec<String> = keys.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!("{{{}}}", parts.join(", "))
}

/// A fixture of `tests/fixtures/config/`, named as the command line would.
fn fixture(rel: &str) -> File {
    let name = format!("tests/fixtures/config/{rel}");
    File {
        text: fixture_text(&name),
        name,
    }
}

/// A fixture of `tests/fixtures/config/`, named by its path there alone
/// (`nginx/reviews.conf`).
fn short_fixture(rel: &str) -> File {
    File {
        text: fixture_text(&format!("tests/fixtures/config/{rel}")),
        name: rel.to_string(),
    }
}

fn fixture_text(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// (host, from, policy, line) of each rule, in order.
fn rules(r: &Read) -> Vec<(String, Option<String>, Mapping, usize)> {
    r.rules
        .iter()
        .map(|x| {
            (
                x.host.clone(),
                x.from.clone(),
                x.policy.clone(),
                x.source.line,
            )
        })
        .collect()
}

/// One rule as [`table`] lists it: host, caller, policy, file name, line.
type Row = (String, Option<String>, Mapping, String, usize);

/// Every rule, in order, its file by name alone.
fn table(r: &Read) -> Vec<Row> {
    r.rules
        .iter()
        .map(|x| {
            (
                x.host.clone(),
                x.from.clone(),
                x.policy.clone(),
                x.source.file.rsplit('/').next().unwrap().to_string(),
                x.source.line,
            )
        })
        .collect()
}

/// A rule for every caller, as [`table`] lists it.
fn row(host: &str, policy: &str, file: &str, line: usize) -> Row {
    (host.into(), None, yaml(policy), file.into(), line)
}

/// Whether a note at `file`'s `line` says `words`.
fn has_note(r: &Read, file: &str, line: usize, words: &str) -> bool {
    r.notes
        .iter()
        .any(|n| n.source.file.ends_with(file) && n.source.line == line && n.text.contains(words))
}

/// A service's calls in a written topology.
fn calls(doc: &Value, svc: &str) -> Vec<Value> {
    doc["services"][svc]["calls"]
        .as_sequence()
        .cloned()
        .unwrap_or_default()
}

/// The call to `to` among `calls`.
fn call_to<'a>(calls: &'a [Value], to: &str) -> &'a Value {
    calls
        .iter()
        .find(|c| c["to"].as_str() == Some(to))
        .unwrap_or_else(|| panic!("no call to {to}"))
}

/// A policy map from its YAML text.
fn yaml(text: &str) -> Mapping {
    serde_yaml::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// One expected rule: host, caller, the line that set it, its policy.
type Want<'a> = (&'a str, Option<&'a str>, usize, &'a str);

/// Every rule of `read` against `want`, in order.
fn check_rules(file: &str, read: &Read, want: &[Want<'_>]) {
    let got: Vec<&Rule> = read.rules.iter().collect();
    for (i, (host, from, line, p)) in want.iter().enumerate() {
        let r = got
            .get(i)
            .unwrap_or_else(|| panic!("rule {i} ({host}) missing; got {got:#?}"));
        assert_eq!(r.host, *host, "rule {i}: {r:#?}");
        assert_eq!(r.from.as_deref(), *from, "rule {i}: {r:#?}");
        assert_eq!(
            r.source.to_string(),
            format!("{file}:{line}"),
            "rule {i} ({host}): {}",
            r.what
        );
        assert_eq!(r.policy, yaml(p), "rule {i} ({host}): {}", r.what);
    }
    assert_eq!(got.len(), want.len(), "{got:#?}");
}

/// The note at `line` holding `text`, or a panic listing them all.
fn noted(read: &Read, line: usize, text: &str) {
    assert!(
        read.notes
            .iter()
            .any(|n| n.source.line == line && n.text.contains(text)),
        "no note at line {line} with {text:?} in {:#?}",
        read.notes
    );
}

/// The call from `caller` to `to` in a written topology.
fn call<'a>(doc: &'a Value, caller: &str, to: &str) -> &'a Mapping {
    doc["services"][caller]["calls"]
        .as_sequence()
        .and_then(|calls| calls.iter().find(|c| c["to"].as_str() == Some(to)))
        .and_then(Value::as_mapping)
        .unwrap_or_else(|| panic!("no call {caller} -> {to}"))
}
