//! Writing what a configuration sets onto a call graph: each rule's host
//! matched to the graph's services (short name, `name.namespace`, FQDN),
//! a `policy:` and a `source:` on every call it governs, the services'
//! sidecars, and what could not be mapped listed at the top.

use std::collections::{BTreeMap, HashMap};

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
    let services: Vec<String> = doc
        .get("services")
        .and_then(Value::as_mapping)
        .map(|m| {
            m.keys()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let notes = notes(format, read, &services, graph_name);
    let mut w = Writer::new(read, &services);
    if let Some(map) = doc.get_mut("services").and_then(Value::as_mapping_mut) {
        for (key, service) in map.iter_mut() {
            if service.is_null() {
                *service = Value::Mapping(Mapping::new());
            }
            if let (Some(caller), Some(map)) = (key.as_str(), service.as_mapping_mut()) {
                w.service(caller, map);
            }
        }
    }
    let body = serde_yaml::to_string(&doc)
        .map_err(|e| RunError::Usage(format!("writing the topology failed: {e}")))?;
    let out = w.render(format, graph_name, &notes, &body);
    Topology::from_yaml(&out, "the imported topology")?;
    Ok(Written { yaml: out, notes })
}

/// What was not mapped: hosts no service answers to (with a
/// did-you-mean), the reader's notes, the kinds it skipped.
fn notes(format: ConfigFormat, read: &Read, services: &[String], graph_name: &str) -> Vec<String> {
    let mut notes: Vec<String> = vec![];
    let mut unmatched: BTreeMap<String, (String, String)> = BTreeMap::new();
    let hosts = read
        .rules
        .iter()
        .map(|r| (&r.host, &r.source, &r.what))
        .chain(read.services.iter().map(|r| (&r.host, &r.source, &r.what)));
    for (host, source, what) in hosts {
        if !services.iter().any(|n| names(host, n)) {
            unmatched
                .entry(host.clone())
                .or_insert_with(|| (source.to_string(), what.clone()));
        }
    }
    let shorts: Vec<String> = services.iter().map(|n| parts(n).0).collect();
    for (host, (source, what)) in &unmatched {
        let (short, _) = parts(host);
        let hint = crate::yaml::did_you_mean(&short, shorts.iter().map(String::as_str))
            .and_then(|s| services.iter().find(|n| parts(n).0 == s))
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
    notes
}

/// Puts the rules on a graph's services and calls, keeping what each
/// `source:` line's comment will say.
struct Writer<'a> {
    read: &'a Read,
    /// The rules by their host's short name: a call reads only its own.
    by_short: HashMap<String, Vec<usize>>,
    /// The services behind a sidecar the configuration sets.
    sidecar_of: HashMap<&'a str, &'a super::ServiceRule>,
    /// Each source's description, for its comment.
    comments: BTreeMap<String, String>,
    /// Calls given a policy.
    governed: usize,
}

impl<'a> Writer<'a> {
    fn new(read: &'a Read, services: &'a [String]) -> Writer<'a> {
        let mut by_short: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, r) in read.rules.iter().enumerate() {
            by_short.entry(parts(&r.host).0).or_default().push(i);
        }
        let sidecar_of = services
            .iter()
            .filter_map(|n| {
                read.services
                    .iter()
                    .find(|r| r.set.contains_key("sidecar") && names(&r.host, n))
                    .map(|r| (n.as_str(), r))
            })
            .collect();
        Writer {
            read,
            by_short,
            sidecar_of,
            comments: BTreeMap::new(),
            governed: 0,
        }
    }

    /// Service `caller`'s own settings, and a policy on each call a rule
    /// governs.
    fn service(&mut self, caller: &str, map: &mut Mapping) {
        for r in self.read.services.iter().filter(|r| names(&r.host, caller)) {
            for (k, v) in &r.set {
                map.insert(k.clone(), v.clone());
            }
            self.comments
                .entry(r.source.to_string())
                .or_insert_with(|| r.what.clone());
        }
        let Some(calls) = map.get_mut("calls").and_then(Value::as_sequence_mut) else {
            return;
        };
        for call in calls.iter_mut() {
            if let Some(to) = call.as_str() {
                let mut m = Mapping::new();
                m.insert("to".into(), Value::String(to.to_string()));
                *call = Value::Mapping(m);
            }
            if let Some(call) = call.as_mapping_mut() {
                self.call(caller, call);
            }
        }
    }

    fn call(&mut self, caller: &str, call: &mut Mapping) {
        let to = call
            .get("to")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let governed = governing(self.read, &self.by_short, caller, &to).or_else(|| {
            // A call of a service behind a sidecar that no upstream of the
            // configuration is for: its proxy passes it on once.
            self.sidecar_of.get(caller).map(|r| {
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
        let Some((policy, source, what)) = governed else {
            return;
        };
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
        self.comments.entry(source).or_insert(what);
        self.governed += 1;
    }

    /// The written topology: a header of what was done and not mapped,
    /// then `body` with a comment after each `source:`.
    fn render(
        &self,
        format: ConfigFormat,
        graph_name: &str,
        notes: &[String],
        body: &str,
    ) -> String {
        let mut out = format!(
            "# {graph_name} with the retry policies {} sets ({} call{} governed)\n",
            format.name(),
            self.governed,
            if self.governed == 1 { "" } else { "s" }
        );
        out.push_str(
            "# written by chaoslab import; each call's `source:` is the line that set its retries\n",
        );
        if notes.is_empty() {
            out.push_str("# everything read was mapped\n");
        } else {
            out.push_str("# not mapped, or never taken by the lab's requests:\n");
            for n in notes {
                out.push_str(&format!("#   {n}\n"));
            }
        }
        for line in body.lines() {
            out.push_str(line);
            if let Some(src) = line.trim_start().strip_prefix("source: ") {
                let src = src.trim_matches(|c| c == '\'' || c == '"');
                if let Some(what) = self.comments.get(src) {
                    out.push_str(&format!("  # {what}"));
                }
            }
            out.push('\n');
        }
        out
    }
}

/// The policy, source and description that govern the calls from
/// `caller` to `to`. Retries come from one rule, as a proxy takes one
/// route: the last rule for this caller that sets retries, else the last
/// for every caller, else the format's default. The rules that set no
/// retries (a pool, outlier detection) add their keys on top, in order.
fn governing(
    read: &Read,
    by_short: &HashMap<String, Vec<usize>>,
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
