//! Generated YAML for the fuzz checks, as property tests: where `cargo
//! fuzz` cannot run (no nightly compiler), these still check every bound
//! and the no-panic guarantee on every `cargo test`.
//!
//! Two kinds of input: trees of the keys and values topologies and
//! scenarios use, written in block or flow style (most are refused, each
//! for a different reason), and the seed files mutated line by line (most
//! get deep into validation before something is wrong).

use proptest::prelude::*;

/// Keys a topology or scenario knows, a few near misses, and names.
#[rustfmt::skip]
const KEYS: &[&str] = &[
    "name", "description", "ownership", "header", "attribution", "at_least_once", "policy",
    "preset", "attempts", "budget", "min_per_sec", "ttl", "backoff", "timeout", "budget_model",
    "signal", "breaker", "deadline", "load", "entry", "rps", "arrival", "services", "calls",
    "to", "count", "p", "mode", "parallel", "capacity", "context", "url", "fault", "error_rate",
    "phase", "latency", "status", "down", "workers", "queue", "work", "cancel", "scenario",
    "duration", "warmup", "steps", "at", "fail", "heal", "set", "expect", "during", "min",
    "max", "service", "edge", "root_availability", "amplification", "storm_radius", "retries",
    "A", "B", "C", "D", "DB", "X", "<<", "servces", "rate", "",
];

/// Values those keys take, and values they must refuse.
#[rustfmt::skip]
const WORDS: &[&str] = &[
    "~", "true", "false", "on", "off", "0", "1", "2", "-1", "0.1", "1.5", "1e309", "-0", ".nan",
    ".inf", "-.inf", "NaN", "18446744073709551616", "4294967296", "100000", "1000001", "1s",
    "250ms", "0ms", "3m", "1h", "-5s", "1.5s", "10x", "1s..3s", "0s..", "..2s", "ownership",
    "retry", "budget", "none", "finagle", "envoy", "grpc", "aws", "aws-2026", "window",
    "tokens", "quota", "concurrency", "nack", "overloaded", "pushback", "retry-after",
    "propagate", "declared", "simple", "learned", "fail-open", "fail-close", "before", "after",
    "dropped", "constant", "poisson", "x-error-claim", "x bad", "http://127.0.0.1:1/",
    "https://x/", "A", "B", "C", "D", "DB", "E", "Z", "''", "\"\"", "\"\\u0000\"", "'é'",
    "\"🦀\"", "&a 1", "*a", "!!str 5", "!tag x", "|", ">-", "{}", "[]", "[A, B]", "{ to: B,
    count: 2 }", "{ to: B, mode: fail-open }",
];

/// A YAML tree.
#[derive(Debug, Clone)]
enum Node {
    Scalar(String),
    Map(Vec<(String, Node)>),
    List(Vec<Node>),
}

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(WORDS).prop_map(str::to_string),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|f| format!("{f}")),
        1 => (0u64..100_000, proptest::sample::select(&["ms", "s", "m", "h", "us", ""][..]))
            .prop_map(|(n, u)| format!("{n}{u}")),
        1 => "[ -~]{0,12}".prop_map(|s| format!("{s:?}")),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => proptest::sample::select(KEYS).prop_map(str::to_string),
        1 => "[A-Za-z_][A-Za-z0-9_-]{0,8}",
    ]
}

fn node() -> impl Strategy<Value = Node> {
    scalar()
        .prop_map(Node::Scalar)
        .prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec((key(), inner.clone()), 0..6).prop_map(Node::Map),
                proptest::collection::vec(inner, 0..5).prop_map(Node::List),
            ]
        })
}

/// Writes a tree as YAML: block style, or flow style below a random depth.
fn render(n: &Node, indent: usize, flow_below: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match n {
        Node::Scalar(s) => {
            out.push(' ');
            out.push_str(s);
            out.push('\n');
        }
        _ if indent / 2 >= flow_below => {
            out.push(' ');
            flow(n, out);
            out.push('\n');
        }
        Node::Map(kv) if kv.is_empty() => out.push_str(" {}\n"),
        Node::List(v) if v.is_empty() => out.push_str(" []\n"),
        Node::Map(kv) => {
            out.push('\n');
            for (k, v) in kv {
                out.push_str(&pad);
                out.push_str(k);
                out.push(':');
                render(v, indent + 2, flow_below, out);
            }
        }
        Node::List(v) => {
            out.push('\n');
            for item in v {
                out.push_str(&pad);
                out.push('-');
                render(item, indent + 2, flow_below, out);
            }
        }
    }
}

fn flow(n: &Node, out: &mut String) {
    match n {
        Node::Scalar(s) => out.push_str(s),
        Node::Map(kv) => {
            out.push('{');
            for (i, (k, v)) in kv.iter().enumerate() {
                out.push_str(if i == 0 { " " } else { ", " });
                out.push_str(k);
                out.push_str(": ");
                flow(v, out);
            }
            out.push_str(" }");
        }
        Node::List(v) => {
            out.push('[');
            for (i, item) in v.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                flow(item, out);
            }
            out.push(']');
        }
    }
}

/// Services the generated files name.
#[rustfmt::skip]
const NAMES: &[&str] = &[
    "A", "B", "C", "D", "DB", "X",
];

/// A value for `key`: usually one that key takes, sometimes one it must
/// refuse, sometimes anything.
fn value_for(key: &'static str) -> BoxedStrategy<String> {
    let (good, bad): (&'static [&'static str], &'static [&'static str]) = match key {
        "preset" | "policy" => (
            &[
                "ownership",
                "retry",
                "budget",
                "none",
                "finagle",
                "envoy",
                "grpc",
                "aws",
                "aws-2026",
            ],
            &["retries", "Ownership"],
        ),
        "attempts" | "count" | "workers" => {
            (&["1", "2", "3"], &["0", "100001", "4294967296", "1.5"])
        }
        "queue" => (&["0", "10", "1000"], &["1000001", "-1"]),
        "status" => (&["500", "503", "429"], &["200", "99", "600"]),
        "budget" | "error_rate" | "p" | "min" | "max" | "approx" | "tolerance" => (
            &["0", "0.1", "0.5", "1", "1.0", "off"],
            &["-0.1", "2", ".nan"],
        ),
        "timeout" | "ttl" | "backoff" | "latency" | "work" | "at" | "duration" | "warmup" => (
            &["0ms", "250ms", "1s", "3s", "36s", "1.5s"],
            &["-1s", "1h", "1e30s", "5"],
        ),
        "during" => (
            &["1s..3s", "0s..1s", "3s..30s"],
            &["5s..4s", "3s..", "1s..100h"],
        ),
        "budget_model" => (&["window", "concurrency", "tokens", "quota"], &["bucket"]),
        "signal" => (
            &[
                "ownership",
                "nack",
                "overloaded",
                "pushback",
                "retry-after",
                "none",
            ],
            &["ack"],
        ),
        "at_least_once" | "parallel" | "cancel" | "down" | "reset" | "ownership" => {
            (&["true", "false"], &["yes", "2", "on"])
        }
        "breaker" => (&["on", "off"], &["true", "{ consecutive: 0 }"]),
        "deadline" => (&["propagate", "off"], &["on"]),
        "attribution" => (&["simple", "declared", "learned"], &["learnt"]),
        "mode" => (&["fail-open", "fail-close"], &["open"]),
        "phase" => (&["before", "after"], &["during"]),
        "context" => (&["dropped"], &["kept"]),
        "arrival" => (&["constant", "poisson"], &["burst"]),
        "clients" => (&["1", "50"], &["0", "2.5", "-1"]),
        "think" => (&["100ms", "1s"], &["0s", "2h"]),
        "rps" | "capacity" | "min_per_sec" => (&["1", "120", "300"], &["0", "1e9", "-5"]),
        "url" => (&["http://127.0.0.1:9/"], &["https://x/", "http://a b/"]),
        "header" => (&["x-error-claim", "x-claim"], &["x bad", "é"]),
        _ => (NAMES, &["Q", "a"]),
    };
    prop_oneof![
        8 => proptest::sample::select(good).prop_map(str::to_string),
        1 => proptest::sample::select(bad).prop_map(str::to_string),
        1 => scalar(),
    ]
    .boxed()
}

/// `key: value` for some of `keys`, each with a value it might take, and
/// now and then a key nobody knows.
fn fields(keys: &'static [&'static str]) -> impl Strategy<Value = Vec<String>> {
    (
        proptest::sample::subsequence(keys, 0..=keys.len().min(3)),
        proptest::option::weighted(0.05, (key(), scalar())),
    )
        .prop_flat_map(|(ks, extra)| {
            let vals: Vec<_> = ks.iter().map(|&k| value_for(k)).collect();
            (Just(ks), vals, Just(extra))
        })
        .prop_map(|(ks, vals, extra)| {
            let mut parts: Vec<String> = ks
                .iter()
                .zip(vals)
                .map(|(k, v)| format!("{k}: {v}"))
                .collect();
            if let Some((k, v)) = extra {
                parts.push(format!("{k}: {v}"));
            }
            parts
        })
}

/// A flow map of these parts.
fn flow_map(parts: impl IntoIterator<Item = String>) -> String {
    let parts: Vec<String> = parts.into_iter().collect();
    format!("{{ {} }}", parts.join(", "))
}

/// A flow map with `first` before the parts.
fn with_first(first: String, parts: Vec<String>) -> String {
    flow_map(std::iter::once(first).chain(parts))
}

#[rustfmt::skip]
const SERVICE_KEYS: &[&str] = &[
    "parallel", "capacity", "context", "ownership", "url", "workers", "queue", "work", "cancel",
];
#[rustfmt::skip]
const FAULT_KEYS: &[&str] = &[
    "error_rate", "phase", "latency", "status", "down",
];
#[rustfmt::skip]
const POLICY_KEYS: &[&str] = &[
    "preset", "attempts", "budget", "min_per_sec", "ttl", "backoff", "timeout", "budget_model",
    "signal", "breaker", "deadline",
];
#[rustfmt::skip]
const LOAD_KEYS: &[&str] = &[
    "entry", "rps", "arrival", "timeout", "clients", "think",
];
#[rustfmt::skip]
const OWNERSHIP_KEYS: &[&str] = &[
    "header", "attribution", "at_least_once",
];

/// One call in a `calls:` list: a name, or a map with `to`.
fn call() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(NAMES).prop_map(str::to_string),
        1 => (proptest::sample::select(NAMES), fields(&["count", "p", "mode", "timeout", "attempts"]))
            .prop_map(|(to, f)| with_first(format!("to: {to}"), f)),
    ]
}

/// A topology file shaped as topologies are: `name`, some of `ownership`,
/// `policy` and `load`, and up to six services with calls, faults and
/// resources, any of it wrong in any way.
fn topology_doc() -> impl Strategy<Value = String> {
    let service = (
        proptest::sample::select(NAMES),
        proptest::collection::vec(call(), 0..4),
        fields(SERVICE_KEYS),
        proptest::option::of(fields(FAULT_KEYS).prop_map(flow_map)),
    );
    (
        proptest::option::of(fields(OWNERSHIP_KEYS).prop_map(flow_map)),
        proptest::option::of(fields(POLICY_KEYS).prop_map(flow_map)),
        proptest::option::of(fields(LOAD_KEYS).prop_map(flow_map)),
        proptest::collection::vec(service, 1..7),
        proptest::option::weighted(0.2, scenario_doc()),
    )
        .prop_map(|(ownership, policy, load, services, scenario)| {
            let mut out = String::from("name: gen\n");
            for (k, v) in [("ownership", ownership), ("policy", policy), ("load", load)] {
                if let Some(v) = v {
                    out.push_str(&format!("{k}: {v}\n"));
                }
            }
            out.push_str("services:\n");
            for (name, calls, mut f, fault) in services {
                if !calls.is_empty() {
                    f.push(format!("calls: [{}]", calls.join(", ")));
                }
                f.extend(fault.map(|fault| format!("fault: {fault}")));
                out.push_str(&format!("  {name}: {}\n", flow_map(f)));
            }
            if let Some(sc) = scenario {
                out.push_str("scenario:\n");
                for l in sc.lines() {
                    out.push_str("  ");
                    out.push_str(l);
                    out.push('\n');
                }
            }
            out
        })
}

/// One scenario step: `at`, and one action (or two, or none).
fn step() -> impl Strategy<Value = String> {
    let action = prop_oneof![
        (
            Just("fail"),
            prop_oneof![
                proptest::sample::select(NAMES).prop_map(str::to_string),
                fields(FAULT_KEYS).prop_map(|f| with_first("service: D".into(), f)),
            ]
        ),
        (Just("heal"), value_for("service")),
        (Just("down"), value_for("service")),
        (Just("up"), value_for("service")),
        (Just("drop_context"), value_for("service")),
        (Just("restore_context"), value_for("service")),
        (
            Just("policy"),
            prop_oneof![value_for("policy"), fields(POLICY_KEYS).prop_map(flow_map)]
        ),
        (Just("rps"), value_for("rps")),
        (Just("attribution"), value_for("attribution")),
        (Just("at_least_once"), value_for("at_least_once")),
        (Just("reset"), value_for("reset")),
        (Just("pause"), value_for("reset")),
        (
            Just("set"),
            fields(&["workers", "work", "queue"]).prop_map(|f| with_first("service: DB".into(), f))
        ),
    ];
    (value_for("at"), proptest::collection::vec(action, 0..3)).prop_map(|(at, acts)| {
        let mut parts = vec![format!("at: {at}")];
        parts.extend(acts.into_iter().map(|(k, v)| format!("{k}: {v}")));
        format!("{{ {} }}", parts.join(", "))
    })
}

/// One expectation: a window, maybe a service, and bounds on figures.
fn expectation() -> impl Strategy<Value = String> {
    let figure = proptest::sample::select(
        &[
            "amplification",
            "root_availability",
            "storm_radius",
            "goodput_rps",
            "utilisation",
            "work_wasted",
            "retries",
            "latency_ms.p99",
            "bogus",
        ][..],
    );
    (
        value_for("during"),
        proptest::option::of(value_for("service")),
        proptest::collection::vec(
            (
                figure,
                fields(&["min", "max", "approx", "tolerance"]).prop_map(flow_map),
            ),
            0..3,
        ),
    )
        .prop_map(|(during, service, figs)| {
            let mut parts = vec![format!("during: {during}")];
            parts.extend(service.map(|s| format!("service: {s}")));
            parts.extend(figs.into_iter().map(|(f, b)| format!("{f}: {b}")));
            format!("{{ {} }}", parts.join(", "))
        })
}

/// A scenario file: some of `duration`, `warmup`, steps and expectations.
fn scenario_doc() -> impl Strategy<Value = String> {
    (
        proptest::option::of(value_for("duration")),
        proptest::option::of(value_for("warmup")),
        proptest::collection::vec(step(), 0..5),
        proptest::collection::vec(expectation(), 0..4),
    )
        .prop_map(|(duration, warmup, steps, expect)| {
            let mut out = String::new();
            for (k, v) in [("duration", duration), ("warmup", warmup)] {
                if let Some(v) = v {
                    out.push_str(&format!("{k}: {v}\n"));
                }
            }
            for (k, items) in [("steps", steps), ("expect", expect)] {
                if !items.is_empty() {
                    out.push_str(&format!("{k}:\n"));
                    for i in items {
                        out.push_str(&format!("  - {i}\n"));
                    }
                }
            }
            out
        })
}

/// Free-form YAML: a map of any keys to trees of any values, block or
/// flow style.
fn free_doc() -> impl Strategy<Value = String> {
    (proptest::collection::vec((key(), node()), 0..8), 0usize..6).prop_map(|(top, flow_below)| {
        let mut out = String::new();
        for (k, v) in &top {
            out.push_str(k);
            out.push(':');
            render(v, 2, flow_below, &mut out);
        }
        out
    })
}

const SEEDS: &[&str] = &[
    include_str!("../../topologies/uber-chain.yaml"),
    include_str!("../../topologies/metastable.yaml"),
    include_str!("../../topologies/fanout.yaml"),
    include_str!("../../topologies/context-drop.yaml"),
    include_str!("../../topologies/at-least-once.yaml"),
    include_str!("../../topologies/coincidental.yaml"),
    include_str!("../../topologies/availability.yaml"),
    include_str!("../../topologies/three-node.yaml"),
    include_str!("../../scenarios/metastable.yaml"),
    include_str!("../../scenarios/uber-chain-story.yaml"),
];

/// One change to a seed file's lines.
#[derive(Debug, Clone)]
enum Mutation {
    /// Replace what follows the line's first `: ` with a value.
    Value(usize, String),
    /// Drop a line.
    Delete(usize),
    /// Repeat a line.
    Repeat(usize),
    /// Insert `key: value` after a line, at that line's indentation.
    Insert(usize, String, String),
    /// Cut the file at a byte.
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<usize>();
    prop_oneof![
        4 => (at, scalar()).prop_map(|(i, v)| Mutation::Value(i, v)),
        1 => at.prop_map(Mutation::Delete),
        1 => at.prop_map(Mutation::Repeat),
        2 => (at, key(), scalar()).prop_map(|(i, k, v)| Mutation::Insert(i, k, v)),
        1 => at.prop_map(Mutation::Truncate),
    ]
}

fn mutate(seed: &str, ms: &[Mutation]) -> String {
    let mut lines: Vec<String> = seed.lines().map(str::to_string).collect();
    for m in ms {
        if lines.is_empty() {
            break;
        }
        let n = lines.len();
        match m {
            Mutation::Value(i, v) => {
                let l = &mut lines[i % n];
                if let Some(p) = l.find(": ") {
                    l.truncate(p + 2);
                    l.push_str(v);
                }
            }
            Mutation::Delete(i) => {
                lines.remove(i % n);
            }
            Mutation::Repeat(i) => {
                let l = lines[i % n].clone();
                lines.insert(i % n, l);
            }
            Mutation::Insert(i, k, v) => {
                let l = &lines[i % n];
                let pad = &l[..l.len() - l.trim_start().len()];
                let new = format!("{pad}{k}: {v}");
                lines.insert(i % n + 1, new);
            }
            Mutation::Truncate(i) => {
                let text = lines.join("\n");
                let mut cut = i % (text.len() + 1);
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                lines = text[..cut].lines().map(str::to_string).collect();
            }
        }
    }
    lines.join("\n") + "\n"
}

fn mutated() -> impl Strategy<Value = String> {
    (
        proptest::sample::select(SEEDS),
        proptest::collection::vec(mutation(), 1..5),
    )
        .prop_map(|(seed, ms)| mutate(seed, &ms))
}

/// A header value as peers send them: the words, numbers, traces, space
/// around them, control and non-ASCII bytes, several copies.
fn header_bytes() -> impl Strategy<Value = Vec<u8>> {
    let part = prop_oneof![
        Just(b"true".to_vec()),
        Just(b"FALSE".to_vec()),
        Just(b" claimed ".to_vec()),
        Just(b"unclaimed".to_vec()),
        Just(b"\tTrue\t".to_vec()),
        Just(b"18446744073709551615".to_vec()),
        Just(b"18446744073709551616".to_vec()),
        Just(b"4294967295".to_vec()),
        any::<u64>().prop_map(|n| n.to_string().into_bytes()),
        (any::<u64>(), any::<u32>()).prop_map(|(r, d)| format!("{r}-{d}").into_bytes()),
        proptest::collection::vec(any::<u8>(), 0..16),
        "[ -~]{0,10}".prop_map(String::into_bytes),
    ];
    proptest::collection::vec(part, 1..4).prop_map(|ps| ps.join(&b"\n"[..]))
}

proptest! {
    #[test]
    fn generated_topologies_load_or_fail_cleanly(doc in topology_doc()) {
        super::topology(doc.as_bytes());
    }

    #[test]
    fn free_form_yaml_loads_or_fails_cleanly(doc in free_doc()) {
        super::topology(doc.as_bytes());
        super::scenario(doc.as_bytes());
    }

    #[test]
    fn mutated_seeds_load_or_fail_cleanly(doc in mutated()) {
        super::topology(doc.as_bytes());
        super::scenario(doc.as_bytes());
    }

    #[test]
    fn generated_scenarios_load_or_fail_cleanly(doc in scenario_doc()) {
        super::scenario(doc.as_bytes());
    }

    #[test]
    fn header_values_read_as_what_they_say(v in header_bytes()) {
        super::headers(&v);
    }

    #[test]
    fn any_bytes_are_read_without_a_panic(v in proptest::collection::vec(any::<u8>(), 0..256)) {
        super::topology(&v);
        super::scenario(&v);
        super::headers(&v);
    }
}

#[test]
fn every_seed_file_loads_through_the_checks() {
    for seed in SEEDS {
        super::topology(seed.as_bytes());
        super::scenario(seed.as_bytes());
    }
    // The generators make what they should.
    let doc = mutate(
        "a: 1\n  b: 2\n",
        &[Mutation::Insert(0, "k".into(), "v".into())],
    );
    assert_eq!(doc, "a: 1\nk: v\n  b: 2\n");
}
