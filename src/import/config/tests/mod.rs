//! Each format's fixture against a table written from its documentation,
//! its bad input, and the policies written onto a graph.

mod haproxy;
mod istio;
mod nginx;

use super::{read, ConfigFormat, File, Read};

/// Reads `files` (paths from the repository's root) as `format`.
pub(super) fn fixture(format: ConfigFormat, files: &[&str]) -> Read {
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
