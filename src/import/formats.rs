//! What each tool exports, read into a [`Graph`] (SPEC section 12). Every
//! reader names the place of a mistake: the JSON path
//! (`data[3].callCount: expected a number, found "12"`) or the line of a
//! Prometheus text.

use std::collections::HashMap;

use serde_json::Value;

use super::graph::Graph;
use super::json::{count, field, json, keys, kind, string};
use super::Format;

/// Reads `text` as `format`.
pub fn read(format: Format, text: &str, virtual_client: &str) -> Result<Graph, String> {
    match format {
        Format::Jaeger => dependencies(&json(text)?, &["data", "dependencies"]),
        Format::Zipkin => dependencies(&json(text)?, &[]),
        Format::Servicegraph => servicegraph(text, virtual_client),
        Format::Kiali => kiali(&json(text)?),
        Format::JaegerTrace => super::trace::read(&json(text)?),
    }
}

/// Dependency links `[{parent, child, callCount, errorCount?}]`, at the
/// top or under the first of `wrappers` present.
fn dependencies(doc: &Value, wrappers: &[&str]) -> Result<Graph, String> {
    let (list, at) = match wrappers.iter().find(|w| doc.get(**w).is_some()) {
        Some(w) => (&doc[*w], (*w).to_string()),
        None if wrappers.is_empty() || doc.is_array() => (doc, String::new()),
        None => {
            return Err(format!(
                "expected `{}` holding the dependency links (found the keys {})",
                wrappers.join("` or `"),
                keys(doc)
            ))
        }
    };
    let items = list.as_array().ok_or_else(|| {
        format!(
            "{}: expected a list of dependency links, found {}",
            if at.is_empty() { "the document" } else { &at },
            kind(list)
        )
    })?;
    let mut g = Graph::default();
    for (i, link) in items.iter().enumerate() {
        let here = format!("{at}[{i}]");
        let parent = string(link, "parent", &here)?;
        let child = string(link, "child", &here)?;
        let calls = count(
            field(link, "callCount", &here)?,
            &format!("{here}.callCount"),
            false,
        )?;
        let errors = match link.get("errorCount") {
            None | Some(Value::Null) => 0.0,
            Some(e) => count(e, &format!("{here}.errorCount"), false)?,
        };
        if errors > calls {
            return Err(format!(
                "{here}.errorCount: {errors} errors of {calls} calls: more errors than calls"
            ));
        }
        g.link(parent, child, calls, errors);
    }
    Ok(g)
}

/// The servicegraph connector's counters: Prometheus text
/// (`traces_service_graph_request_total{client="a",server="b"} 12`) or a
/// Prometheus HTTP API result (`{"data": {"result": [...]}}`): a vector
/// of counts, or a matrix of samples over a range (`...[1m]`) that gives
/// each counter's rate per second, so that the roots can be written at
/// the rate the mesh saw. The connector names callers outside the mesh
/// `user` (`virtual_client`, for a connector that names them otherwise):
/// their calls enter the roots, unless `user` is also a service of the
/// mesh ([`outside`] says how that is told).
fn servicegraph(text: &str, virtual_client: &str) -> Result<Graph, String> {
    let mut samples: Vec<Sample> = vec![];
    let mut per_second = false;
    let mut short = 0;
    if text.trim_start().starts_with('{') {
        let doc = json(text)?;
        let result = doc
            .pointer("/data/result")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                format!(
                    "expected a Prometheus API answer with `data.result` (found the keys {})",
                    keys(&doc)
                )
            })?;
        per_second = doc.pointer("/data/resultType").and_then(Value::as_str) == Some("matrix");
        for (i, r) in result.iter().enumerate() {
            let at = format!("data.result[{i}]");
            let metric = field(r, "metric", &at)?;
            let name = metric
                .get("__name__")
                .and_then(Value::as_str)
                .unwrap_or("traces_service_graph_request_total");
            let client = string(metric, "client", &format!("{at}.metric"))?;
            let server = string(metric, "server", &format!("{at}.metric"))?;
            let x = if per_second {
                match rate(field(r, "values", &at)?, &format!("{at}.values"))? {
                    Some(x) => x,
                    None => {
                        short += 1;
                        continue;
                    }
                }
            } else {
                let value = field(r, "value", &at)?;
                let v = value.get(1).ok_or_else(|| {
                    format!(
                        "{at}.value: expected [time, \"value\"], found {}",
                        kind(value)
                    )
                })?;
                count(v, &format!("{at}.value[1]"), true)?
            };
            let virtual_node =
                metric.get("connection_type").and_then(Value::as_str) == Some("virtual_node");
            samples.push(Sample {
                name: name.to_string(),
                client: client.to_string(),
                server: server.to_string(),
                virtual_node,
                x,
            });
        }
    } else {
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some(name) = line
                .split(['{', ' '])
                .next()
                .filter(|n| n.starts_with("traces_service_graph_request_"))
            else {
                continue;
            };
            let at = format!("line {}", n + 1);
            let (labels, value) = match (line.find('{'), line.rfind('}')) {
                (Some(a), Some(b)) if a < b => (&line[a + 1..b], line[b + 1..].trim()),
                _ => {
                    return Err(format!(
                        "{at}: `{name}` has no {{client=…,server=…}} labels"
                    ))
                }
            };
            let label = |key: &str| -> Result<String, String> {
                labels
                    .split(',')
                    .filter_map(|kv| kv.split_once('='))
                    .find(|(k, _)| k.trim() == key)
                    .map(|(_, v)| v.trim().trim_matches('"').to_string())
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| format!("{at}: `{name}` has no `{key}` label"))
            };
            let value = value.split_whitespace().next().unwrap_or_default();
            let x: f64 = value
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| format!("{at}: `{value}` is not a count ≥ 0"))?;
            let virtual_node = label("connection_type").is_ok_and(|t| t == "virtual_node");
            samples.push(Sample {
                name: name.to_string(),
                client: label("client")?,
                server: label("server")?,
                virtual_node,
                x,
            });
        }
    }
    let mut g = Graph::default();
    g.per_second = per_second;
    let from_outside = outside(&samples, virtual_client, &mut g);
    let mut failed: Vec<&Sample> = vec![];
    for s in &samples {
        match s.name.as_str() {
            "traces_service_graph_request_total" if from_outside.holds(s) => {
                g.enter(&s.server, s.x)
            }
            "traces_service_graph_request_total" => g.link(&s.client, &s.server, s.x, 0.0),
            "traces_service_graph_request_failed_total" => failed.push(s),
            _ => {}
        }
    }
    for s in failed {
        if !from_outside.holds(s) {
            g.link(&s.client, &s.server, 0.0, s.x);
        }
    }
    if g.nodes.is_empty() && short > 0 {
        return Err(format!(
            "no rate: each of the {short} series has fewer than 2 samples, and a rate needs two (a longer range, `[5m]`, holds more)"
        ));
    }
    if g.nodes.is_empty() {
        return Err("no traces_service_graph_request_total sample: is this the servicegraph connector's output?".into());
    }
    Ok(g)
}

/// One sample of the connector's counters.
struct Sample {
    /// The metric's name.
    name: String,
    client: String,
    server: String,
    /// `connection_type="virtual_node"`: one side is not a service that
    /// sent spans (the callers outside the mesh, an uninstrumented peer).
    virtual_node: bool,
    /// The count, or the rate per second over a range.
    x: f64,
}

/// Which samples are requests from outside the mesh: those whose client
/// is the connector's virtual client (`user`). When a service of the mesh
/// has that name too (something calls it), the name cannot tell the two
/// apart: a sample the connector marked `connection_type="virtual_node"`
/// is from outside, and every other call from `user` is the service's. The
/// header says so, and warns when no sample carries the mark, so that a
/// reader knows the outside world's requests may be read as the service's.
fn outside<'a>(samples: &[Sample], virtual_client: &'a str, g: &mut Graph) -> Outside<'a> {
    let mut callers: Vec<&str> = samples
        .iter()
        .filter(|s| s.server == virtual_client)
        .map(|s| s.client.as_str())
        .collect();
    callers.sort_unstable();
    callers.dedup();
    let served = !callers.is_empty();
    let marked = samples.iter().any(|s| s.virtual_node);
    if served {
        g.notes.push(format!(
            "`{virtual_client}` is also a service of the mesh ({} call{} it): read as that service, not as the callers outside the mesh{}.",
            callers.join(", "),
            if callers.len() == 1 { "s" } else { "" },
            if marked {
                ", whose calls the connector marks connection_type=\"virtual_node\""
            } else {
                ""
            }
        ));
        let calls_out = samples.iter().any(|s| s.client == virtual_client);
        if !marked && calls_out {
            g.warnings.push(format!(
                "ambiguous: the servicegraph connector names callers outside the mesh `{virtual_client}` too, and no sample carries connection_type=\"virtual_node\" to tell them apart: every call from `{virtual_client}` is read as the service's own (give --virtual-client NAME if the connector names the outside otherwise)."
            ));
        }
    }
    Outside {
        name: virtual_client,
        served,
    }
}

/// How [`outside`] tells the requests from outside the mesh.
struct Outside<'a> {
    /// The connector's name for the callers outside the mesh.
    name: &'a str,
    /// A service of the mesh has that name too.
    served: bool,
}

impl Outside<'_> {
    /// Whether `s` counts requests from outside the mesh.
    fn holds(&self, s: &Sample) -> bool {
        s.client == self.name && (s.virtual_node || !self.served)
    }
}

/// A counter series' rate per second, `values: [[t, "v"], ...]`: its
/// increase over the range (a fall is a reset, after which the counter
/// counted from 0, as Prometheus' `increase` takes it) over the time from
/// its first sample to its last. `None` for fewer than 2 samples.
fn rate(values: &Value, at: &str) -> Result<Option<f64>, String> {
    let list = values.as_array().ok_or_else(|| {
        format!(
            "{at}: expected a list of [time, \"value\"], found {}",
            kind(values)
        )
    })?;
    let mut points: Vec<(f64, f64)> = Vec::with_capacity(list.len());
    for (k, p) in list.iter().enumerate() {
        let here = format!("{at}[{k}]");
        let (Some(t), Some(v)) = (p.get(0), p.get(1)) else {
            return Err(format!(
                "{here}: expected [time, \"value\"], found {}",
                kind(p)
            ));
        };
        let t = count(t, &format!("{here}[0]"), false)?;
        let v = count(v, &format!("{here}[1]"), true)?;
        if let Some(&(before, _)) = points.last() {
            if t <= before {
                return Err(format!(
                    "{here}[0]: the time {t} is not after the sample before it ({before})"
                ));
            }
        }
        points.push((t, v));
    }
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Ok(None);
    };
    if points.len() < 2 {
        return Ok(None);
    }
    let increase: f64 = points
        .windows(2)
        .map(|w| {
            if w[1].1 < w[0].1 {
                w[1].1
            } else {
                w[1].1 - w[0].1
            }
        })
        .sum();
    Ok(Some(increase / (last.0 - first.0)))
}

/// Kiali's graph: nodes (`data.id`, named by `service`, `app` or
/// `workload`; an `unknown` node, or `isRoot`, is the outside world) and
/// edges (`data.source`, `data.target`, `data.traffic.rates` with rates
/// as strings, `http` and `httpPercentErr`, or `grpc`). A TCP edge's rate
/// is bytes, not calls: it is taken as one call per request of its
/// caller.
fn kiali(doc: &Value) -> Result<Graph, String> {
    let elements = field(doc, "elements", "the document")?;
    let nodes = field(elements, "nodes", "elements")?
        .as_array()
        .ok_or("elements.nodes: expected a list")?;
    let edges = field(elements, "edges", "elements")?
        .as_array()
        .ok_or("elements.edges: expected a list")?;
    // Node id → its service, or None for the outside world.
    let mut names: HashMap<String, Option<String>> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        let at = format!("elements.nodes[{i}].data");
        let data = field(n, "data", &format!("elements.nodes[{i}]"))?;
        let id = string(data, "id", &at)?;
        let outside = data.get("nodeType").and_then(Value::as_str) == Some("unknown")
            || data.get("isRoot").and_then(Value::as_bool) == Some(true)
                && ["service", "app", "workload"]
                    .iter()
                    .all(|k| data.get(*k).is_none());
        let name = ["service", "app", "workload"]
            .iter()
            .find_map(|k| data.get(*k).and_then(Value::as_str))
            .map(str::to_string);
        if name.is_none() && !outside {
            return Err(format!(
                "{at}: a node with no `service`, `app` or `workload` to name it"
            ));
        }
        names.insert(id.to_string(), if outside { None } else { name });
    }
    // Kiali's rates are requests per second.
    let mut g = Graph::default();
    g.per_second = true;
    let mut tcp: Vec<(String, String)> = vec![];
    for (i, e) in edges.iter().enumerate() {
        let at = format!("elements.edges[{i}].data");
        let data = field(e, "data", &format!("elements.edges[{i}]"))?;
        let end = |key: &str| -> Result<Option<String>, String> {
            let id = string(data, key, &at)?;
            names.get(id).cloned().ok_or_else(|| {
                format!("{at}.{key}: `{id}` is not the id of any node in elements.nodes")
            })
        };
        let (from, to) = (end("source")?, end("target")?);
        let rates = data.pointer("/traffic/rates");
        let rate = |key: &str| -> Result<f64, String> {
            match rates.and_then(|r| r.get(key)) {
                None | Some(Value::Null) => Ok(0.0),
                Some(v) => count(v, &format!("{at}.traffic.rates.{key}"), true),
            }
        };
        let rps = rate("http")?.max(rate("grpc")?);
        let err = rate("httpPercentErr")?
            .max(rate("grpcPercentErr")?)
            .min(100.0)
            / 100.0;
        match (from, to) {
            (_, None) => {}
            (None, Some(to)) => g.enter(&to, rps),
            (Some(from), Some(to)) if rps == 0.0 && rate("tcp")? > 0.0 => tcp.push((from, to)),
            (Some(from), Some(to)) => g.link(&from, &to, rps, rps * err),
        }
    }
    for (from, to) in tcp {
        let f = g.service(&from);
        let into = g.served(f);
        g.link(&from, &to, into, 0.0);
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The formats read with the connector's default name for the outside.
    fn read(format: Format, text: &str) -> Result<Graph, String> {
        super::read(format, text, "user")
    }

    #[test]
    fn mistakes_name_their_place() {
        let e = read(
            Format::Jaeger,
            r#"{"data":[{"parent":"a","child":"b","callCount":"12"}]}"#,
        )
        .unwrap_err();
        assert_eq!(
            e,
            "data[0].callCount: expected a JSON number ≥ 0, found the string \"12\""
        );
        let e = read(Format::Zipkin, r#"[{"parent":"a","callCount":1}]"#).unwrap_err();
        assert!(e.starts_with("[0]: no `child`"), "{e}");
        let e = read(Format::Zipkin, "[{").unwrap_err();
        assert!(e.starts_with("line 1, column 2: not JSON"), "{e}");
        let e = read(
            Format::Servicegraph,
            "traces_service_graph_request_total{client=\"a\"} 3\n",
        )
        .unwrap_err();
        assert_eq!(
            e,
            "line 1: `traces_service_graph_request_total` has no `server` label"
        );
        let e = read(Format::Kiali, r#"{"elements":{"nodes":[{"data":{"id":"n1","service":"a"}}],"edges":[{"data":{"source":"n1","target":"n9"}}]}}"#)
            .unwrap_err();
        assert!(
            e.contains("elements.edges[0].data.target: `n9` is not the id of any node"),
            "{e}"
        );
    }

    /// A fall is a reset: the counter counted from 0 after it, so the
    /// new value is all increase (Prometheus' `increase`, without its
    /// extrapolation to the range's ends).
    #[test]
    fn a_counter_reset_still_counts_what_came_after() {
        let v: Value =
            serde_json::from_str(r#"[[0,"100"],[10,"160"],[20,"30"],[30,"90"]]"#).unwrap();
        // 60 + 30 + 60 over 30 s.
        assert_eq!(rate(&v, "values").unwrap(), Some(5.0));
        let one: Value = serde_json::from_str(r#"[[0,"100"]]"#).unwrap();
        assert_eq!(rate(&one, "values").unwrap(), None);
    }
}
