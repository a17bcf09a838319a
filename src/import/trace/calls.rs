//! From spans to the graph: each entry span's operation an endpoint,
//! each call from the entry span above its caller's side to the callee's,
//! counted per request, with the calls nobody instrumented and the calls
//! that overlapped in time (`parallel`).

use std::collections::HashMap;

use super::{Graph, Span};

/// The graph the spans make.
pub(super) fn graph(services: &[String], spans: &[Span]) -> Result<Graph, String> {
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
pub(super) fn endpoint_names(ops: &[&str]) -> Vec<String> {
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
