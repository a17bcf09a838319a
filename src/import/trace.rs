//! `jaeger-trace`: Jaeger's trace JSON, as `/api/traces` answers it and
//! the UI downloads it (SPEC section 12). Dependency links only say that
//! one service called another; spans say which inbound operation made
//! which call, so a service with several operations becomes endpoints
//! (SPEC section 11), a service-level cycle whose endpoints are acyclic
//! stays whole, calls per request are counted per operation, and calls
//! that overlapped in time are written `parallel`.
//!
//! An *entry span* is a span whose parent is in another service, or that
//! has none: it is a request served, and its operation the endpoint
//! that served it. A call runs from the nearest entry span above the
//! caller's side (a client span, or any span of the caller) to the callee's
//! entry span.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::graph::Graph;
use super::json::{count, field, keys, kind, named};

/// One span, as far as the mapping needs it.
struct Span {
    /// Its place in the document, for messages.
    at: String,
    service: usize,
    operation: String,
    start: f64,
    end: f64,
    client: bool,
    error: bool,
    /// Its `peer.service` tag: whom a client span called.
    peer: Option<String>,
    /// The span it is a child of (or follows from).
    parent: Option<usize>,
}

/// Reads a trace document into a graph of endpoints.
pub fn read(doc: &Value) -> Result<Graph, String> {
    let mut read = Spans::default();
    for (at, trace) in &traces(doc)? {
        read.trace(at, trace)?;
    }
    if read.spans.is_empty() {
        return Err(no_spans(doc));
    }
    let Spans {
        services,
        mut spans,
        ids,
        refs,
        ..
    } = read;
    let orphans = link_parents(&mut spans, refs, &ids);
    let mut g = graph(&services, &spans)?;
    if let Some(note) = orphans_note(&orphans) {
        g.notes.push(note);
    }
    Ok(g)
}

/// The document's traces, each with its place in it: a list of traces,
/// one trace (with `spans`), or `data` holding a list of them.
fn traces(doc: &Value) -> Result<Vec<(String, &Value)>, String> {
    Ok(match doc {
        Value::Array(list) => list
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("[{i}]"), t))
            .collect(),
        Value::Object(m) if m.contains_key("spans") => vec![(String::new(), doc)],
        Value::Object(m) => {
            let data = m.get("data").ok_or_else(|| {
                format!(
                    "expected `data` holding the traces, or a trace with `spans` (found the keys {})",
                    keys(doc)
                )
            })?;
            let list = data
                .as_array()
                .ok_or_else(|| format!("data: expected a list of traces, found {}", kind(data)))?;
            list.iter()
                .enumerate()
                .map(|(i, t)| (format!("data[{i}]"), t))
                .collect()
        }
        _ => {
            return Err(format!(
                "expected Jaeger's trace JSON (`{{\"data\": [traces]}}`), found {}",
                kind(doc)
            ));
        }
    })
}

/// The spans of every trace read so far, their services, and their
/// parents as references (resolved once every span is read).
#[derive(Default)]
struct Spans {
    services: Vec<String>,
    service_at: HashMap<String, usize>,
    spans: Vec<Span>,
    /// (traceID, spanID) → span.
    ids: HashMap<(String, String), usize>,
    /// Each span's parent reference, as [`parent_ref`] reads it.
    refs: Vec<Option<(String, String, String)>>,
}

/// Where a trace is in the document, for messages about its spans.
struct Place<'a> {
    /// The trace's place (empty for a document that is one trace).
    at: &'a str,
    /// `.` after a place, nothing without one.
    dot: &'a str,
}

impl Spans {
    /// Reads one trace's spans.
    fn trace(&mut self, at: &str, trace: &Value) -> Result<(), String> {
        let place = Place {
            at,
            dot: if at.is_empty() { "" } else { "." },
        };
        let dot = place.dot;
        let trace_id = trace.get("traceID").and_then(Value::as_str).unwrap_or("");
        let processes = match trace.get("processes") {
            None | Some(Value::Null) => None,
            Some(p) => Some(p.as_object().ok_or_else(|| {
                format!(
                    "{at}{dot}processes: expected a map of processes, found {}",
                    kind(p)
                )
            })?),
        };
        let list = field(trace, "spans", if at.is_empty() { "the trace" } else { at })?;
        let list = list.as_array().ok_or_else(|| {
            format!(
                "{at}{dot}spans: expected a list of spans, found {}",
                kind(list)
            )
        })?;
        for (j, s) in list.iter().enumerate() {
            self.span(
                format!("{at}{dot}spans[{j}]"),
                s,
                trace_id,
                processes,
                &place,
            )?;
        }
        Ok(())
    }

    /// Reads one span, at `here`, of the trace `trace_id`.
    fn span(
        &mut self,
        here: String,
        s: &Value,
        trace_id: &str,
        processes: Option<&Map<String, Value>>,
        place: &Place<'_>,
    ) -> Result<(), String> {
        let span_id = name(s, "spanID", &here)?;
        let tid = s
            .get("traceID")
            .and_then(Value::as_str)
            .unwrap_or(trace_id)
            .to_string();
        let service = service_name(s, &here, processes, place)?;
        let operation = name(s, "operationName", &here)?;
        let start = count(
            field(s, "startTime", &here)?,
            &format!("{here}.startTime"),
            false,
        )?;
        let duration = count(
            field(s, "duration", &here)?,
            &format!("{here}.duration"),
            false,
        )?;
        let Tags {
            client,
            error,
            peer,
        } = tags(s, &here)?;
        let k = self.spans.len();
        if let Some(&other) = self.ids.get(&(tid.clone(), span_id.to_string())) {
            return Err(format!(
                "{here}.spanID: {span_id:?} is also the id of {}",
                self.spans[other].at
            ));
        }
        self.ids.insert((tid.clone(), span_id.to_string()), k);
        self.refs.push(parent_ref(s, &here, &tid)?);
        let n = self.services.len();
        let services = &mut self.services;
        let service = *self
            .service_at
            .entry(service.to_string())
            .or_insert_with(|| {
                services.push(service.to_string());
                n
            });
        self.spans.push(Span {
            at: here,
            service,
            operation: operation.to_string(),
            start,
            end: start + duration,
            client,
            error,
            peer,
            parent: None,
        });
        Ok(())
    }
}

/// The span's service: its own `process`, or the trace's process its
/// `processID` names.
fn service_name<'a>(
    s: &'a Value,
    here: &str,
    processes: Option<&'a Map<String, Value>>,
    Place { at, dot }: &Place<'_>,
) -> Result<&'a str, String> {
    match (s.get("process"), s.get("processID")) {
        (Some(p), _) if p.is_object() => name(p, "serviceName", &format!("{here}.process")),
        (_, Some(pid)) => {
            let pid_s = pid.as_str().ok_or_else(|| {
                format!(
                    "{here}.processID: expected a process id, found {}",
                    kind(pid)
                )
            })?;
            let p = processes.and_then(|m| m.get(pid_s)).ok_or_else(|| {
                format!(
                    "{here}.processID: {pid_s:?} is not in {at}{dot}processes (its processes: {})",
                    processes.map_or("none".into(), |m| keys(&Value::Object(m.clone())))
                )
            })?;
            name(p, "serviceName", &format!("{at}{dot}processes.{pid_s}"))
        }
        _ => Err(format!(
            "{here}: no `processID` (found the keys {})",
            keys(s)
        )),
    }
}

/// The error for a document without a span, with the errors Jaeger's
/// answer gave if it gave any.
fn no_spans(doc: &Value) -> String {
    let said = match doc.get("errors") {
        Some(e @ Value::Array(list)) if !list.is_empty() => {
            format!(" (the answer's errors: {e})")
        }
        _ => String::new(),
    };
    format!("no spans: the document holds no trace with a span{said}")
}

/// Sets each span's parent from its reference; returns the references
/// to a parent the document does not hold, each named by its place.
///
/// A parent the document does not hold (a trace cut short, a span never
/// stored) is common in what Jaeger answers, and its UI only warns: such
/// a span is taken as a root, and the header says so.
fn link_parents(
    spans: &mut [Span],
    refs: Vec<Option<(String, String, String)>>,
    ids: &HashMap<(String, String), usize>,
) -> Vec<String> {
    let mut orphans: Vec<String> = vec![];
    for (k, r) in refs.into_iter().enumerate() {
        if let Some((at, tid, sid)) = r {
            match ids.get(&(tid.clone(), sid.clone())) {
                Some(p) => spans[k].parent = Some(*p),
                None => orphans.push(format!("{at}: {sid:?} in the trace {tid:?}")),
            }
        }
    }
    orphans
}

/// The header's note on the spans taken as roots, if any was.
fn orphans_note(orphans: &[String]) -> Option<String> {
    let first = orphans.first()?;
    Some(format!(
        "{} span{} named a parent the traces do not hold (first {first}): taken as root{}.",
        orphans.len(),
        if orphans.len() == 1 { "" } else { "s" },
        if orphans.len() == 1 { "" } else { "s" },
    ))
}

/// A non-empty string `key` of `v`.
fn name<'a>(v: &'a Value, key: &str, at: &str) -> Result<&'a str, String> {
    named(v, key, at, "a name")
}

/// What a span's tags say of it.
#[derive(Default)]
struct Tags {
    /// `span.kind: client`.
    client: bool,
    /// The `error` tag, true as a bool or as the string Jaeger's older
    /// clients write.
    error: bool,
    /// `peer.service`: the service a client span called.
    peer: Option<String>,
}

/// What the span's tags say.
fn tags(s: &Value, at: &str) -> Result<Tags, String> {
    let mut out = Tags::default();
    let Some(tags) = s.get("tags").filter(|t| !t.is_null()) else {
        return Ok(out);
    };
    let list = tags
        .as_array()
        .ok_or_else(|| format!("{at}.tags: expected a list of tags, found {}", kind(tags)))?;
    for (i, t) in list.iter().enumerate() {
        let key = name(t, "key", &format!("{at}.tags[{i}]"))?;
        let value = t.get("value").unwrap_or(&Value::Null);
        match key {
            "span.kind" => out.client |= value.as_str() == Some("client"),
            "error" => {
                out.error |= value.as_bool() == Some(true)
                    || value
                        .as_str()
                        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
            }
            "peer.service" => {
                out.peer = value
                    .as_str()
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(str::to_string);
            }
            _ => {}
        }
    }
    Ok(out)
}

/// The span's parent reference: its first `CHILD_OF`, else its first
/// `FOLLOWS_FROM` (a call whose answer nobody waits for is still a
/// call), as (its place, traceID, spanID).
fn parent_ref(
    s: &Value,
    at: &str,
    trace: &str,
) -> Result<Option<(String, String, String)>, String> {
    let Some(refs) = s.get("references").filter(|r| !r.is_null()) else {
        return Ok(None);
    };
    let list = refs.as_array().ok_or_else(|| {
        format!(
            "{at}.references: expected a list of references, found {}",
            kind(refs)
        )
    })?;
    let mut found: Option<(bool, String, String, String)> = None;
    for (i, r) in list.iter().enumerate() {
        let here = format!("{at}.references[{i}]");
        let child = match name(r, "refType", &here)? {
            "CHILD_OF" => true,
            "FOLLOWS_FROM" => false,
            other => {
                return Err(format!(
                    "{here}.refType: expected CHILD_OF or FOLLOWS_FROM, found {other:?}"
                ));
            }
        };
        let sid = name(r, "spanID", &here)?;
        let tid = r.get("traceID").and_then(Value::as_str).unwrap_or(trace);
        if found.as_ref().is_none_or(|f| child && !f.0) {
            found = Some((
                child,
                format!("{here}.spanID"),
                tid.to_string(),
                sid.to_string(),
            ));
        }
    }
    Ok(found.map(|(_, at, t, s)| (at, t, s)))
}

/// The graph the spans make.
fn graph(services: &[String], spans: &[Span]) -> Result<Graph, String> {
    let above = entries_above(spans)?;
    let (mut g, node_of) = endpoint_nodes(services, spans);
    let mut made = calls(&mut g, spans, &above, &node_of);
    uninstrumented_calls(&mut g, services, spans, &above, &node_of, &mut made);
    mark_parallel(&mut g, made, &node_of);
    Ok(g)
}

/// Whether span `k` is an entry span: its parent is in another service,
/// or it has none.
fn is_entry(spans: &[Span], k: usize) -> bool {
    spans[k]
        .parent
        .is_none_or(|p| spans[p].service != spans[k].service)
}

/// Each span's nearest entry span at or above it.
fn entries_above(spans: &[Span]) -> Result<Vec<Option<usize>>, String> {
    let mut above: Vec<Option<usize>> = vec![None; spans.len()];
    for k in 0..spans.len() {
        let mut path = vec![];
        let mut at = k;
        let found = loop {
            if let Some(e) = above[at] {
                break e;
            }
            if is_entry(spans, at) {
                break at;
            }
            path.push(at);
            if path.len() > spans.len() {
                return Err(format!(
                    "{}.references: the span is its own ancestor",
                    spans[k].at
                ));
            }
            at = spans[at].parent.unwrap_or(at);
        };
        above[at] = Some(found);
        for p in path {
            above[p] = Some(found);
        }
    }
    Ok(above)
}

/// A node per service, or per inbound operation of a service that shows
/// two or more; and each entry span's node (`usize::MAX` for the rest).
fn endpoint_nodes(services: &[String], spans: &[Span]) -> (Graph, Vec<usize>) {
    // Each service's inbound operations, in the order first seen, and
    // each one's place among them.
    let mut ops: Vec<Vec<&str>> = vec![vec![]; services.len()];
    let mut op_at: HashMap<(usize, &str), usize> = HashMap::new();
    for (k, s) in spans.iter().enumerate() {
        if is_entry(spans, k) {
            op_at
                .entry((s.service, s.operation.as_str()))
                .or_insert_with(|| {
                    ops[s.service].push(&s.operation);
                    ops[s.service].len() - 1
                });
        }
    }
    let endpoint_names: Vec<Vec<String>> = ops.iter().map(|o| endpoint_names(o)).collect();
    let mut g = Graph::default();
    let mut node_of = vec![usize::MAX; spans.len()];
    for (k, s) in spans.iter().enumerate() {
        if !is_entry(spans, k) {
            continue;
        }
        let endpoint = if ops[s.service].len() >= 2 {
            let at = op_at
                .get(&(s.service, s.operation.as_str()))
                .copied()
                .unwrap_or(0);
            Some(endpoint_names[s.service][at].as_str())
        } else {
            None
        };
        let n = g.node(&services[s.service], endpoint);
        if endpoint.is_some_and(|e| e != s.operation) {
            g.nodes[n].operation = Some(s.operation.clone());
        }
        node_of[k] = n;
    }
    (g, node_of)
}

/// When each call of an entry span ran, per entry span.
type Made = HashMap<usize, Vec<(f64, f64)>>;

/// The calls between entry spans: each entry span with a parent is a call
/// from the entry span above that parent, except the attempts after the
/// first of a call one client span made again (its retries). Returns when
/// each call ran: the caller's client span is how long it waited; without
/// one, the callee's own span.
fn calls(g: &mut Graph, spans: &[Span], above: &[Option<usize>], node_of: &[usize]) -> Made {
    let mut made = Made::new();
    // The entry spans below each client span that is not itself an
    // entry, by start (a call made again shows as several of them), and
    // the last attempt when they are one call made again.
    let mut under_client: HashMap<usize, (Vec<usize>, Option<usize>)> = HashMap::new();
    for (k, s) in spans.iter().enumerate() {
        if let Some(p) = s.parent.filter(|&p| is_entry(spans, k) && spans[p].client) {
            if above[p] != Some(p) {
                under_client.entry(p).or_default().0.push(k);
            }
        }
    }
    for (served, last) in under_client.values_mut() {
        served.sort_by(|a, b| spans[*a].start.total_cmp(&spans[*b].start));
        *last = retried(spans, node_of, served);
    }
    let error = |k: usize| f64::from(u8::from(spans[k].error));
    for (k, s) in spans.iter().enumerate() {
        if !is_entry(spans, k) {
            continue;
        }
        let Some(p) = s.parent else {
            g.entered[node_of[k]] += 1.0;
            continue;
        };
        let caller = above[p].unwrap_or(p);
        let (from, to) = (node_of[caller], node_of[k]);
        let Some((served, last)) = under_client.get(&p) else {
            g.link_nodes(from, to, 1.0, error(k));
            made.entry(caller).or_default().push((s.start, s.end));
            continue;
        };
        match *last {
            // A call made again: once, when its last attempt comes; each
            // failed attempt is its callee's error all the same.
            Some(last) if last == k => {
                let failed: f64 = served.iter().map(|&a| error(a)).sum();
                g.link_nodes(from, to, 1.0, failed);
                g.retried(from, to, (served.len() - 1) as f64);
                made.entry(caller)
                    .or_default()
                    .push((spans[p].start, spans[p].end));
            }
            Some(_) => {}
            None => {
                g.link_nodes(from, to, 1.0, error(k));
                made.entry(caller)
                    .or_default()
                    .push((spans[p].start, spans[p].end));
            }
        }
    }
    made
}

/// The last attempt, when the entry spans one client span waited on
/// (`served`, by start) are one call made again: two or more, each
/// serving the same node, one after the other, every one but the last
/// failed. Calls that overlap, or that reach other operations, are a
/// client's parallel calls, not its retries.
fn retried(spans: &[Span], node_of: &[usize], served: &[usize]) -> Option<usize> {
    let (&last, before) = served.split_last()?;
    if before.is_empty() {
        return None;
    }
    let one_after_another = served
        .windows(2)
        .all(|w| node_of[w[0]] == node_of[w[1]] && spans[w[1]].start >= spans[w[0]].end);
    let failed_then_tried = before.iter().all(|&k| spans[k].error);
    (one_after_another && failed_then_tried).then_some(last)
}

/// Calls to services that sent no span of their own: a client span that
/// names its callee in `peer.service` and has no entry span below it is a
/// call to an uninstrumented leaf (a database, a cache, a provider). A
/// peer that sent spans elsewhere in the document is instrumented, and a
/// client span without one below it is a span lost, not a leaf.
fn uninstrumented_calls(
    g: &mut Graph,
    services: &[String],
    spans: &[Span],
    above: &[Option<usize>],
    node_of: &[usize],
    made: &mut Made,
) {
    let mut waited_on = vec![false; spans.len()];
    for (k, s) in spans.iter().enumerate() {
        if let Some(p) = s.parent.filter(|_| is_entry(spans, k)) {
            waited_on[p] = true;
        }
    }
    for (k, s) in spans.iter().enumerate() {
        let Some(peer) = s.peer.as_deref().filter(|_| s.client && !waited_on[k]) else {
            continue;
        };
        if services.iter().any(|name| name == peer) {
            continue;
        }
        let caller = above[k].unwrap_or(k);
        let leaf = g.node(peer, None);
        g.nodes[leaf].uninstrumented = true;
        g.link_nodes(node_of[caller], leaf, 1.0, f64::from(u8::from(s.error)));
        made.entry(caller).or_default().push((s.start, s.end));
    }
}

/// `parallel` on a node whose instances, in most of those that made two
/// calls or more, had calls overlapping in time.
fn mark_parallel(g: &mut Graph, made: Made, node_of: &[usize]) {
    // (instances making ≥ 2 calls, of them with calls overlapping) per node.
    let mut overlap = vec![(0u32, 0u32); g.nodes.len()];
    for (caller, mut calls) in made {
        if calls.len() < 2 {
            continue;
        }
        calls.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut end = f64::NEG_INFINITY;
        let mut overlapped = false;
        for (start, stop) in calls {
            overlapped |= start < end;
            end = end.max(stop);
        }
        let o = &mut overlap[node_of[caller]];
        o.0 += 1;
        o.1 += u32::from(overlapped);
    }
    for (n, (many, overlapped)) in overlap.into_iter().enumerate() {
        g.nodes[n].parallel = many > 0 && overlapped * 2 > many;
    }
}

/// Operation names as endpoint names: a path on the wire takes letters,
/// digits, `-`, `_`, `.` and `~`; anything else becomes `_`, and a name
/// taken already gets `-2`, `-3`, ...
fn endpoint_names(ops: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(ops.len());
    let mut taken: std::collections::HashSet<String> = std::collections::HashSet::new();
    // Per base name, the next suffix to try.
    let mut next: HashMap<String, usize> = HashMap::new();
    for op in ops {
        let mut e = String::new();
        for c in op.chars() {
            let c = if c.is_ascii_alphanumeric() || "-_.~".contains(c) {
                c
            } else {
                '_'
            };
            if !(c == '_' && e.ends_with('_')) {
                e.push(c);
            }
        }
        let e = e.trim_matches('_');
        let base = if e.is_empty() { "op" } else { e };
        let mut e = base.to_string();
        let k = next.entry(base.to_string()).or_insert(2);
        while taken.contains(&e) {
            e = format!("{base}-{k}");
            *k += 1;
        }
        taken.insert(e.clone());
        out.push(e);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_become_names_a_path_takes() {
        assert_eq!(
            endpoint_names(&["GET /cart", "GET  /cart/", "/", "hipstershop.Cart/Get"]),
            ["GET_cart", "GET_cart-2", "op", "hipstershop.Cart_Get"]
        );
    }

    fn span(id: &str, op: &str, p: &str, parent: Option<&str>, start: u64, kind: &str) -> String {
        let refs = parent.map_or(String::new(), |r| {
            format!(r#","references":[{{"refType":"CHILD_OF","traceID":"t","spanID":"{r}"}}]"#)
        });
        format!(
            r#"{{"traceID":"t","spanID":"{id}","operationName":"{op}","startTime":{start},"duration":10,"processID":"{p}","tags":[{{"key":"span.kind","type":"string","value":"{kind}"}}]{refs}}}"#
        )
    }

    fn doc(spans: &[String]) -> Value {
        let text = format!(
            r#"{{"data":[{{"traceID":"t","spans":[{}],"processes":{{"p1":{{"serviceName":"a"}},"p2":{{"serviceName":"b"}}}}}}]}}"#,
            spans.join(",")
        );
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn client_spans_tie_the_caller_operation_to_the_callee_operation() {
        let g = read(&doc(&[
            span("1", "x", "p1", None, 0, "server"),
            span("2", "inner", "p1", Some("1"), 1, "internal"),
            span("3", "call b", "p1", Some("2"), 2, "client"),
            span("4", "serve", "p2", Some("3"), 3, "server"),
            span("5", "call b", "p1", Some("2"), 5, "client"),
            span("6", "serve", "p2", Some("5"), 6, "server"),
        ]))
        .unwrap();
        let names: Vec<String> = g.nodes.iter().map(|n| n.name()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(g.links.len(), 1);
        assert_eq!(g.links[0].calls, 2.0);
        assert_eq!(g.entered, [1.0, 0.0]);
        // The two calls ran 2..12 and 5..15: they overlapped.
        assert!(g.nodes[0].parallel);
    }

    #[test]
    fn bad_traces_name_their_place() {
        let e = read(&doc(&[span("1", "x", "p9", None, 0, "server")])).unwrap_err();
        assert!(
            e.starts_with("data[0].spans[0].processID: \"p9\" is not in data[0].processes"),
            "{e}"
        );
        let e = read(&doc(&[
            span("1", "x", "p1", None, 0, "server"),
            span("2", "x", "p2", Some("7"), 0, "server"),
        ]))
        .expect("a parent the traces do not hold is a root");
        assert_eq!(e.roots().len(), 2);
        assert_eq!(
            e.notes,
            ["1 span named a parent the traces do not hold (first data[0].spans[1].references[0].spanID: \"7\" in the trace \"t\"): taken as root."]
        );
        let e = read(&serde_json::json!({"data": [], "errors": null})).unwrap_err();
        assert!(e.starts_with("no spans"), "{e}");
    }
}
