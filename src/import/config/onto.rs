//! Writing what a configuration sets onto a call graph: each rule's host
//! matched to the graph's services (short name, `name.namespace`, FQDN),
//! a `policy:` and a `source:` on every call it governs, the services'
//! sidecars, and what could not be mapped listed at the top.

use std::collections::BTreeMap;

use serde_yaml::{Mapping, Value};

use super::{ConfigFormat, Read, Rule};
use crate::error::RunError;
use crate::topology::Topology;

/// The topology `onto` wrote, and the notes to print.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The topology's text, checked.
    pub yaml: String,
    /// What was not mapped or not taken, one line each.
    pub notes: Vec<String>,
}

/// A host or service name, lower case, without the cluster's suffix, cut
/// into its short name and the rest (`reviews.bookinfo.svc.cluster.local`
/// is `reviews` in `bookinfo`).
fn parts(name: &str) -> (String, Option<String>) {
    let mut n = name.trim().trim_end_matches('.').to_ascii_lowercase();
    // An endpoint (`svc/op`) is its service's.
    if let Some((svc, _)) = n.split_once('/') {
        n = svc.to_string();
    }
    for suffix in [".svc.cluster.local", ".svc"] {
        if let Some(stripped) = n.strip_suffix(suffix) {
            n = stripped.to_string();
        }
    }
    match n.split_once('.') {
        Some((short, rest)) => {
            let ns = rest.split('.').next().unwrap_or(rest).to_string();
            (short.to_string(), Some(ns))
        }
        None => (n, None),
    }
}

/// Whether `host` names the service `name`: the same short name, and the
/// same namespace when both give one.
pub fn names(host: &str, name: &str) -> bool {
    let (hs, hns) = parts(host);
    let (ss, sns) = parts(name);
    hs == ss
        && match (hns, sns) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
}

/// Writes `read` onto the topology `graph` (the text of file
/// `graph_name`).
pub fn onto(
    format: ConfigFormat,
    read: &Read,
    graph: &str,
    graph_name: &str,
) -> Result<Written, RunError> {
    // The graph must be a topology the lab runs before anything is added.
    Topology::from_yaml(graph, graph_name)?;
    let mut doc: Value = serde_yaml::from_str(graph)
        .map_err(|e| RunError::Usage(format!("--onto {graph_name}: {e}")))?;
    let names: Vec<String> = doc
        .get("services")
        .and_then(Value::as_mapping)
        .map(|m| {
            m.keys()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let mut notes: Vec<String> = vec![];
    // Hosts no service answers to, with a did-you-mean.
    let mut unmatched: BTreeMap<String, (String, String)> = BTreeMap::new();
    let hosts = read
        .rules
        .iter()
        .map(|r| (&r.host, &r.source, &r.what))
        .chain(read.services.iter().map(|r| (&r.host, &r.source, &r.what)));
    for (host, source, what) in hosts {
        if !names.iter().any(|n| names_host(host, n)) {
            unmatched
                .entry(host.clone())
                .or_insert_with(|| (source.to_string(), what.clone()));
        }
    }
    for (host, (source, what)) in &unmatched {
        let (short, _) = parts(host);
        let shorts: Vec<String> = names.iter().map(|n| parts(n).0).collect();
        let hint = crate::yaml::did_you_mean(&short, shorts.iter().map(String::as_str))
            .and_then(|s| names.iter().find(|n| parts(n).0 == s))
            .map(|n| format!(" (did you mean {n}?)"))
            .unwrap_or_default();
        notes.push(format!(
            "{source}: {what}: no service of {graph_name} is the host {host}{hint}"
        ));
    }
    for n in &read.notes {
        notes.push(format!("{}: {}", n.source, n.text));
    }
    for (kind, count) in &read.skipped {
        notes.push(format!(
            "skipped {count} document{} of kind {kind} ({} reads no such kind)",
            if *count == 1 { "" } else { "s" },
            format.name()
        ));
    }
    let mut comments: BTreeMap<String, String> = BTreeMap::new();
    let mut governed = 0usize;
    // The services behind a sidecar the configuration sets.
    let sidecar_of: std::collections::HashMap<&str, &super::ServiceRule> = names
        .iter()
        .filter_map(|n| {
            read.services
                .iter()
                .find(|r| r.set.contains_key("sidecar") && names_host(&r.host, n))
                .map(|r| (n.as_str(), r))
        })
        .collect();
    // The rules by their host's short name: a call reads only its own.
    let mut by_short: std::collections::HashMap<String, Vec<usize>> = Default::default();
    for (i, r) in read.rules.iter().enumerate() {
        by_short.entry(parts(&r.host).0).or_default().push(i);
    }
    if let Some(services) = doc.get_mut("services").and_then(Value::as_mapping_mut) {
        for (key, service) in services.iter_mut() {
            let caller = key.as_str().unwrap_or_default().to_string();
            if service.is_null() {
                *service = Value::Mapping(Mapping::new());
            }
            let Some(map) = service.as_mapping_mut() else {
                continue;
            };
            for r in read
                .services
                .iter()
                .filter(|r| names_host(&r.host, &caller))
            {
                for (k, v) in &r.set {
                    map.insert(k.clone(), v.clone());
                }
                comments
                    .entry(r.source.to_string())
                    .or_insert_with(|| r.what.clone());
            }
            let Some(calls) = map.get_mut("calls").and_then(Value::as_sequence_mut) else {
                continue;
            };
            for call in calls.iter_mut() {
                if let Some(to) = call.as_str() {
                    let mut m = Mapping::new();
                    m.insert("to".into(), Value::String(to.to_string()));
                    *call = Value::Mapping(m);
                }
                let Some(call) = call.as_mapping_mut() else {
                    continue;
                };
                let to = call
                    .get("to")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let governed_here = governing(read, &by_short, &caller, &to).or_else(|| {
                    // A call of a service behind a sidecar that no upstream
                    // of the configuration is for: its proxy passes it on
                    // once.
                    sidecar_of.get(caller.as_str()).map(|r| {
                        (
                            super::policy([
                                ("preset", super::s("retry")),
                                ("attempts", super::n(1.0)),
                                ("backoff", super::s("0ms")),
                            ]),
                            r.source.to_string(),
                            format!("{}: no upstream of the configuration is for {to}, so the sidecar passes it on once", r.what),
                        )
                    })
                });
                if let Some((policy, source, what)) = governed_here {
                    let mut merged = call
                        .get("policy")
                        .and_then(Value::as_mapping)
                        .cloned()
                        .unwrap_or_default();
                    for (k, v) in policy {
                        merged.insert(k, v);
                    }
                    call.insert("policy".into(), Value::Mapping(merged));
                    call.insert("source".into(), Value::String(source.clone()));
                    comments.entry(source).or_insert(what);
                    governed += 1;
                }
            }
        }
    }
    let body = serde_yaml::to_string(&doc)
        .map_err(|e| RunError::Usage(format!("writing the topology failed: {e}")))?;
    let mut out = String::new();
    out.push_str(&format!(
        "# {graph_name} with the retry policies {} sets ({} call{} governed)\n",
        format.name(),
        governed,
        if governed == 1 { "" } else { "s" }
    ));
    out.push_str(
        "# written by chaoslab import; each call's `source:` is the line that set its retries\n",
    );
    if notes.is_empty() {
        out.push_str("# everything read was mapped\n");
    } else {
        out.push_str("# not mapped, or never taken by the lab's requests:\n");
        for n in &notes {
            out.push_str(&format!("#   {n}\n"));
        }
    }
    for line in body.lines() {
        out.push_str(line);
        let t = line.trim_start();
        if let Some(src) = t.strip_prefix("source: ") {
            let src = src.trim_matches(|c| c == '\'' || c == '"');
            if let Some(what) = comments.get(src) {
                out.push_str(&format!("  # {what}"));
            }
        }
        out.push('\n');
    }
    Topology::from_yaml(&out, "the imported topology")?;
    Ok(Written { yaml: out, notes })
}

/// Whether `host` names service `name`.
fn names_host(host: &str, name: &str) -> bool {
    names(host, name)
}

/// The policy, source and description that govern the calls from
/// `caller` to `to`. Retries come from one rule, as a proxy takes one
/// route: the last rule for this caller that sets retries, else the last
/// for every caller, else the format's default. The rules that set no
/// retries (a pool, outlier detection) add their keys on top, in order.
fn governing(
    read: &Read,
    by_short: &std::collections::HashMap<String, Vec<usize>>,
    caller: &str,
    to: &str,
) -> Option<(Mapping, String, String)> {
    let mine: Vec<&Rule> = by_short
        .get(&parts(to).0)
        .map(|ids| ids.iter().map(|&i| &read.rules[i]).collect())
        .unwrap_or_default();
    let sets_retries = |r: &&Rule| {
        ["attempts", "retry_on", "preset", "hedge"]
            .iter()
            .any(|k| r.policy.contains_key(*k))
    };
    let general = mine
        .iter()
        .copied()
        .filter(|r| r.from.is_none() && names(&r.host, to));
    let own = mine
        .iter()
        .copied()
        .filter(|r| r.from.as_deref().is_some_and(|f| names(f, caller)) && names(&r.host, to));
    let retrying = own
        .clone()
        .rfind(sets_retries)
        .or_else(|| general.clone().rfind(sets_retries));
    let others: Vec<&Rule> = general.chain(own).filter(|r| !sets_retries(r)).collect();
    let (mut policy, source, what) = match (retrying, &read.default) {
        (Some(r), _) => (r.policy.clone(), r.source.to_string(), r.what.clone()),
        (None, Some((d, why))) => (d.clone(), why.clone(), why.clone()),
        (None, None) => match others.first() {
            Some(r) => (Mapping::new(), r.source.to_string(), r.what.clone()),
            None => return None,
        },
    };
    let mut also = vec![];
    for r in &others {
        for (k, v) in &r.policy {
            policy.insert(k.clone(), v.clone());
        }
        if r.source.to_string() != source {
            also.push(format!("{} ({})", r.what, r.source));
        }
    }
    let what = if also.is_empty() {
        what
    } else {
        format!("{what}; {}", also.join("; "))
    };
    Some((policy, source, what))
}
