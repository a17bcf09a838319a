//! Validation: YAML text → [`Topology`], or a [`TopologyError`] that says
//! where and what.
//!
//! Two kinds of mistakes reach this module. Mistakes in one value (a typo in
//! a key, `error_rate: 1.5`, `ttl: -1s`) are caught while the parser still
//! knows the position, so their messages carry the file, line and column and
//! the YAML path (`services.D.fault.error_rate`). Mistakes in the graph (an
//! unknown dependency, a duplicate name, a cycle, a missing entry) are found
//! after parsing; the parser keeps no spans, so a textual locator (built on
//! [`crate::yaml::Lines`]) finds the offending service's line in the text. Every message is meant to be
//! acted on without opening the source: `chaoslab check` prints it and exits
//! 2.
//!
//! ```
//! use chaoslab_model::topology::Topology;
//!
//! let err = Topology::from_yaml(
//!     "name: t\nservices:\n  A: { calls: [B] }\n  B: { calls: [X] }\n",
//!     "t.yaml",
//! )
//! .unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "t.yaml:4:16: service \"B\" calls \"X\", which is not in the topology"
//! );
//! ```

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::path::Path;
use std::time::Duration;

pub use super::error::TopologyError;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::spec::{ContextSpec, ServiceSpec, TopologySpec};
use super::{
    Edge, LoadSettings, OwnershipSettings, Policy, Service, ServiceId, Topology, DEFAULT_QUEUE,
};
use crate::yaml::{self, key_of, Lines};
use endpoints::{Miss, Names};

/// [`crate::yaml::Location`], at its old path.
pub use crate::yaml::Location;

/// Root requests per second when `load.rps` is not given.
pub const DEFAULT_RPS: f64 = 100.0;

/// Reads and validates a topology file.
pub(crate) fn load(path: &Path) -> Result<Topology, TopologyError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| TopologyError::Read {
        file: file.clone(),
        source,
    })?;
    from_yaml(&text, &file)
}

/// Parses and validates YAML text; `origin` names it in errors.
pub(crate) fn from_yaml(text: &str, origin: &str) -> Result<Topology, TopologyError> {
    let file = || origin.to_string();
    if !yaml::has_content(text) {
        return Err(TopologyError::Empty { file: file() });
    }
    let shape = yaml::from_str::<Shape>(text, origin).map_err(|e| yaml_error(e, text, origin))?;
    match shape {
        Shape::Map => {}
        Shape::Null => return Err(TopologyError::Empty { file: file() }),
        Shape::List => {
            return Err(TopologyError::NotAMap {
                file: file(),
                found: "a list",
            })
        }
        Shape::Scalar => {
            return Err(TopologyError::NotAMap {
                file: file(),
                found: "a single value",
            })
        }
    }
    let spec: TopologySpec =
        yaml::from_str(text, origin).map_err(|e| yaml_error(e, text, origin))?;
    build(spec, &Locator::new(text, origin))
}

/// What the document is, without looking inside (so duplicate keys are
/// left for the real parse, which reports them better).
enum Shape {
    Null,
    Map,
    List,
    Scalar,
}

impl<'de> serde::Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Shape;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a YAML document")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Shape, E> {
                Ok(Shape::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Shape, E> {
                Ok(Shape::Null)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Shape, E> {
                Ok(Shape::Scalar)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Shape, E> {
                Ok(Shape::Scalar)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Shape, E> {
                Ok(Shape::Scalar)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Shape, E> {
                Ok(Shape::Scalar)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Shape, E> {
                Ok(Shape::Scalar)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Shape::List)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Shape::Map)
            }
            fn visit_enum<A: de::EnumAccess<'de>>(self, _: A) -> Result<Shape, A::Error> {
                Ok(Shape::Scalar)
            }
        }
        d.deserialize_any(V)
    }
}

/// The parser's error, with the service whose entry holds it.
fn yaml_error(e: yaml::Error, text: &str, origin: &str) -> TopologyError {
    let service =
        e.at.line
            .and_then(|l| Locator::new(text, origin).service_at_line(l as usize))
            .map(str::to_string);
    let mut message = e.message;
    if let Some(s) = &service {
        if !message.contains(&format!("services.{s}")) {
            let _ = write!(message, " (near service \"{s}\")");
        }
    }
    TopologyError::Yaml {
        at: e.at,
        service,
        message,
    }
}

/// The validated topology of a parsed document: names checked, edges
/// flattened, the graph checked for cycles, the entry found, services
/// layered by depth with their baseline multiplicity.
fn build(spec: TopologySpec, loc: &Locator) -> Result<Topology, TopologyError> {
    let entries = &spec.services.0;
    if entries.is_empty() {
        return Err(TopologyError::EmptyFleet {
            at: loc.key_line("services"),
        });
    }
    service_ids(entries, loc)?;
    let nodes = endpoints::nodes(entries, loc)?;
    let names = Names::new(&nodes, entries);

    let fleet_fields = spec.policy.to_fields();
    let mut policy = Policy::default();
    policy.apply_fields(&fleet_fields);
    let (mut services, edges) = services_and_edges(entries, &nodes, &names, loc)?;

    let order = super::topological_order(&services, &edges)
        .map_err(|cycle| cycle_error(&services, &cycle, loc))?;
    let roots = find_roots(&spec.load, &names, &services, &edges, loc)?;
    let entry = roots[0].entry;
    layer(&mut services, &edges, &order, &roots);
    let user_timeout = spec.load.timeout;
    if let Some(user) = user_timeout {
        check_attempt_timeouts(&services, &edges, &policy, &fleet_fields, user, loc)?;
    }

    let d = OwnershipSettings::default();
    let t = Topology {
        transport: spec.transport,
        name: spec.name,
        description: spec.description,
        ownership: OwnershipSettings {
            header: spec.ownership.header.unwrap_or(d.header),
            attribution: spec.ownership.attribution.unwrap_or(d.attribution),
            at_least_once: spec.ownership.at_least_once.unwrap_or(d.at_least_once),
        },
        policy,
        load: LoadSettings {
            entry,
            rps: roots.iter().map(|r| r.rps).sum(),
            arrival: roots[0].arrival,
            roots,
            timeout: user_timeout,
        },
        services,
        edges,
        scenario: spec.scenario,
    };
    check_sidecars(&t, loc)?;
    Ok(t)
}

/// Every edge through a sidecar under a policy its proxy can express: a
/// budget, a breaker, a dialect or a condition it has no word for is
/// refused, naming the edge (SPEC section 17).
fn check_sidecars(t: &Topology, loc: &Locator) -> Result<(), TopologyError> {
    for e in 0..t.edges.len() {
        if let Some(message) = super::proxy::refusal(t, &t.policy, e) {
            let from = &t.services[t.edges[e].from];
            return Err(TopologyError::Yaml {
                at: loc.in_service(from.service_name(), "sidecar"),
                service: Some(from.service_name().to_string()),
                message,
            });
        }
    }
    Ok(())
}

/// Names: non-empty and unique.
fn service_ids<'s>(
    entries: &'s [(String, ServiceSpec)],
    loc: &Locator,
) -> Result<HashMap<&'s str, ServiceId>, TopologyError> {
    let mut ids: HashMap<&str, ServiceId> = HashMap::with_capacity(entries.len());
    for (i, (name, _)) in entries.iter().enumerate() {
        if name.trim().is_empty() {
            return Err(TopologyError::EmptyName {
                at: loc.service(name, 0),
            });
        }
        if ids.insert(name.as_str(), i).is_some() {
            let first = loc.service(name, 0);
            return Err(TopologyError::DuplicateService {
                at: loc.service(name, 1),
                service: name.clone(),
                first: first
                    .line
                    .map(|l| format!(" (first listed at line {l})"))
                    .unwrap_or_default(),
            });
        }
    }
    Ok(ids)
}

/// Services (a node per endpoint) and flattened edges, depth and
/// multiplicity still unknown.
fn services_and_edges(
    entries: &[(String, ServiceSpec)],
    nodes: &[endpoints::Node],
    names: &Names,
    loc: &Locator,
) -> Result<(Vec<Service>, Vec<Edge>), TopologyError> {
    for (name, s) in entries {
        if s.url.is_some() && !s.calls.is_empty() {
            return Err(TopologyError::UrlWithCalls {
                at: loc.service(name, 0),
                service: name.clone(),
            });
        }
        check_workers(name, s, loc)?;
        check_replicas(name, s, loc)?;
    }
    let mut services = Vec::with_capacity(nodes.len());
    let mut edges = Vec::new();
    let mut group = 0;
    for (from, node) in nodes.iter().enumerate() {
        let (name, s) = &entries[node.service];
        if from == 0 || nodes[from - 1].service != node.service {
            group = from;
        }
        let mut calls = Vec::with_capacity(node.calls.len());
        for c in node.calls {
            let to = match names.get(&c.to) {
                Ok(to) => to,
                Err(Miss::Unknown) => {
                    return Err(TopologyError::UnknownDependency {
                        at: loc.in_service(name, &c.to),
                        service: node.name.clone(),
                        dependency: c.to.clone(),
                        hint: did_you_mean(&c.to, &names.all()),
                    })
                }
                Err(Miss::Ambiguous(why)) => {
                    return Err(TopologyError::Yaml {
                        at: loc.in_service(name, &c.to),
                        service: Some(name.clone()),
                        message: format!("services.{}: calls {why}", node.name),
                    })
                }
            };
            if to == from {
                return Err(TopologyError::SelfCall {
                    at: loc.in_service(name, &c.to),
                    service: node.name.clone(),
                });
            }
            calls.push(edges.len());
            edges.push(Edge {
                from,
                to,
                mode: c.mode,
                count: c.count,
                p: c.p,
                policy: c.policy.clone(),
                source: c.source.as_deref().map(std::sync::Arc::from),
            });
        }
        services.push(Service {
            name: node.name.clone(),
            calls,
            parallel: node.parallel,
            capacity: s.capacity,
            concurrency: s.concurrency,
            context_dropped: s.context == Some(ContextSpec::Dropped),
            ownership: s.ownership,
            url: s.url.as_ref().map(|u| super::at_path(u, node.endpoint)),
            fault: s.fault.to_fault_of(s.errors.to_errors().own),
            work: node.work.unwrap_or(Duration::ZERO),
            workers: s.workers,
            queue: s.queue.unwrap_or(DEFAULT_QUEUE),
            cancel: s.cancel.unwrap_or(false),
            depth: 0,
            multiplicity: 0.0,
            root_multiplicity: super::PerRoot::default(),
            replicas: s.replicas.unwrap_or(1),
            group,
            endpoint: node.endpoint.map(str::to_string),
            endpoint_fault: node
                .fault
                .map(|f| f.to_fault_of(s.errors.to_errors().own))
                .unwrap_or_default(),
            errors: s.errors.to_errors(),
            sidecar: sidecar(name, s, loc)?,
        });
    }
    Ok((services, edges))
}

/// A service's `sidecar:`, refused where it carries nothing (no calls) or
/// sets a key its proxy lacks.
fn sidecar(
    name: &str,
    s: &ServiceSpec,
    loc: &Locator,
) -> Result<Option<super::mesh::Sidecar>, TopologyError> {
    let Some(spec) = &s.sidecar else {
        return Ok(None);
    };
    let calls = !s.calls.is_empty()
        || s.endpoints
            .as_ref()
            .is_some_and(|e| e.0.iter().any(|(_, e)| !e.calls.is_empty()));
    if !calls {
        return Err(TopologyError::Yaml {
            at: loc.in_service(name, "sidecar"),
            service: Some(name.to_string()),
            message: format!(
                "services.{name}.sidecar: {name} makes no calls, so a {} sidecar would carry nothing; give it calls or remove the sidecar",
                spec.kind.name()
            ),
        });
    }
    if let Some(key) = spec.foreign_keys().first() {
        return Err(TopologyError::Yaml {
            at: loc.in_service(name, key),
            service: Some(name.to_string()),
            message: format!(
                "services.{name}.sidecar.{key}: {} has no `{key}` (it is nginx's); HAProxy's retries come from the calls' policy (attempts, retry_on, retry_other_host)",
                spec.kind.name()
            ),
        });
    }
    Ok(Some(spec.to_sidecar()))
}

/// The error for a cycle, spelled from its first service back to it.
fn cycle_error(services: &[Service], cycle: &[ServiceId], loc: &Locator) -> TopologyError {
    let service = services[cycle[0]].name.clone();
    let spelled: Vec<&str> = cycle
        .iter()
        .chain(std::iter::once(&cycle[0]))
        .map(|&i| services[i].name.as_str())
        .collect();
    TopologyError::Cycle {
        at: loc.service(services[cycle[0]].service_name(), 0),
        service,
        cycle: spelled.join(" -> "),
    }
}

/// " (did you mean "D"?)" for a near miss, else empty.
fn did_you_mean(name: &str, names: &[&str]) -> String {
    yaml::did_you_mean(name, names.iter().copied())
        .map(|n| format!(" (did you mean \"{n}\"?)"))
        .unwrap_or_default()
}

/// Finds lines in the text for errors found after parsing (the parser
/// keeps no spans). Block-style `services:` maps are understood; anything
/// else falls back to the file alone.
struct Locator<'a> {
    text: Lines<'a>,
    /// `(name, 0-based line, 0-based column)` of each service key.
    keys: Vec<(&'a str, usize, usize)>,
    /// 0-based line after the last line of the `services:` block.
    block_end: usize,
}

impl<'a> Locator<'a> {
    fn new(text: &'a str, file: &'a str) -> Locator<'a> {
        let text = Lines::new(text, file);
        let block = text
            .find_key(0..text.len(), "services")
            .map_or(0..0, |k| text.block(k));
        let keys = text
            .entries(block.clone())
            .into_iter()
            .filter(|&i| !text.is_item(i))
            .filter_map(|i| Some((key_of(text.line(i))?, i, text.indent(i))))
            .collect();
        Locator {
            keys,
            block_end: block.end,
            text,
        }
    }

    fn file(&self) -> Location {
        self.text.whole_file()
    }

    /// The `occurrence`-th (0-based) listing of service `name`.
    fn service(&self, name: &str, occurrence: usize) -> Location {
        self.keys
            .iter()
            .filter(|(n, _, _)| *n == name)
            .nth(occurrence)
            .map(|&(_, l, c)| self.text.at(l, c))
            .unwrap_or_else(|| self.file())
    }

    /// `token` (e.g. a callee's name) inside service `name`'s entry; the
    /// service's own line if the token cannot be found.
    fn in_service(&self, name: &str, token: &str) -> Location {
        let Some(k) = self.keys.iter().position(|(n, _, _)| *n == name) else {
            return self.file();
        };
        let (_, first, key_col) = self.keys[k];
        let last = self.keys.get(k + 1).map_or(self.block_end, |n| n.1);
        // Skip the key itself on its own line.
        self.text
            .find(first..last.max(first + 1), token, key_col + name.len())
            .unwrap_or_else(|| self.text.at(first, key_col))
    }

    /// The service whose entry holds 1-based `line`, if any.
    fn service_at_line(&self, line: usize) -> Option<&'a str> {
        let l = line.checked_sub(1)?;
        if l >= self.block_end {
            return None;
        }
        self.keys
            .iter()
            .rev()
            .find(|(_, kl, _)| *kl <= l)
            .map(|&(n, _, _)| n)
    }

    /// `key:` inside the top-level `section:` (block or flow style); the
    /// section's line when the key cannot be found there.
    fn key_under(&self, section: &str, key: &str) -> Location {
        let t = &self.text;
        let Some(k) = t.find_key(0..t.len(), section) else {
            return self.key_line(section);
        };
        let block = t.block(k);
        if let Some(i) = t.find_key(block.clone(), key) {
            return t.at(i, t.indent(i));
        }
        let pattern = format!("{key}:");
        t.find(
            k..block.end.max(k + 1),
            &pattern,
            t.indent(k) + section.len(),
        )
        .unwrap_or_else(|| t.at(k, t.indent(k)))
    }

    /// The first line holding `key:` as a key, block or flow style.
    fn key_line(&self, key: &str) -> Location {
        self.text.key(key).unwrap_or_else(|| self.file())
    }
}

mod endpoints;
mod keys;
mod roots;
use keys::{check_attempt_timeouts, check_replicas, check_workers};
use roots::{find_roots, layer};
#[cfg(test)]
mod tests;

pub use endpoints::DEFAULT_ENDPOINT;
