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

mod calls;
use calls::graph;

#[cfg(test)]
mod tests {
    use super::calls::endpoint_names;
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
