//! Bad topologies: exit status 2 and a message that says where and what.
//!
//! Every case runs the real binary (`chaoslab check FILE`) on a file written
//! to the temp directory, and checks the exit status and that stderr names
//! the file, the line and column, the service and the reason.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common;

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A topology file in the temp directory, removed when dropped.
struct TempTopology(PathBuf);

impl TempTopology {
    fn new(label: &str, yaml: &str) -> TempTopology {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("chaoslab-{}-{n}-{label}.yaml", std::process::id()));
        std::fs::write(&path, yaml).expect("write temp topology");
        TempTopology(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }
}

impl Drop for TempTopology {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs `check` on `yaml`; asserts exit status 2, no panic, and that stderr
/// holds the file name followed by `at` (e.g. `:5:16: `) and every one of
/// `needles`. Returns stderr.
fn rejects(label: &str, yaml: &str, at: &str, needles: &[&str]) -> String {
    let file = TempTopology::new(label, yaml);
    let out = common::chaoslab(&["check", file.path()]);
    let (stdout, stderr) = common::text(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{label}: want exit 2\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{label}: panicked: {stderr}");
    let located = format!("{}{at}", file.path());
    assert!(
        stderr.contains(&located),
        "{label}: stderr should contain `{located}`:\n{stderr}"
    );
    for n in needles {
        assert!(
            stderr.contains(n),
            "{label}: stderr should contain `{n}`:\n{stderr}"
        );
    }
    stderr
}

#[test]
fn unknown_dependency() {
    rejects(
        "unknown-dep",
        "name: t\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C: { calls: [X] }\n",
        ":5:16: ",
        &[r#"service "C" calls "X", which is not in the topology"#],
    );
}

#[test]
fn unknown_dependency_suggests_a_near_miss() {
    rejects(
        "near-miss",
        "name: t\nservices:\n  gateway:\n    calls:\n      - { to: carts, count: 2 }\n  cart: {}\n",
        ":5:15: ",
        &[
            r#"service "gateway" calls "carts""#,
            r#"did you mean "cart"?"#,
        ],
    );
}

#[test]
fn duplicate_name() {
    rejects(
        "duplicate",
        "name: t\nservices:\n  A: { calls: [B] }\n  B: {}\n  B: { calls: [C] }\n  C: {}\n",
        ":5:3: ",
        &[r#"duplicate service name "B""#, "first listed at line 4"],
    );
}

#[test]
fn cycle_is_spelled_out() {
    rejects(
        "cycle",
        "name: t\nload: { entry: A }\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C: { calls: [D] }\n  D: { calls: [B] }\n",
        ":5:3: ",
        &[r#"service "B" is on a cycle"#, "B -> C -> D -> B"],
    );
}

#[test]
fn self_call() {
    rejects(
        "self-call",
        "name: t\nservices:\n  A: { calls: [B] }\n  B: { calls: [B] }\n",
        ":4:16: ",
        &[r#"service "B" calls itself"#],
    );
}

#[test]
fn rate_outside_zero_to_one() {
    rejects(
        "rate-high",
        "name: t\nservices:\n  A: { calls: [B] }\n  B:\n    fault: { error_rate: 1.5 }\n",
        ":5:26: ",
        &["services.B.fault.error_rate", "between 0 and 1", "1.5"],
    );
    rejects(
        "rate-negative",
        "name: t\nservices:\n  A: { calls: [B] }\n  B:\n    fault:\n      error_rate: -0.1\n",
        ":6:19: ",
        &["services.B.fault.error_rate", "between 0 and 1", "-0.1"],
    );
}

#[test]
fn negative_duration() {
    rejects(
        "negative-latency",
        "name: t\nservices:\n  A: { calls: [B] }\n  B:\n    fault:\n      latency: -5ms\n",
        ":6:16: ",
        &["services.B.fault.latency", "`-5ms` is negative"],
    );
    rejects(
        "negative-work",
        "name: t\nservices:\n  A: { calls: [B], work: -1s }\n  B: {}\n",
        ":3:26: ",
        &["services.A.work", "negative"],
    );
    rejects(
        "negative-ttl",
        "name: t\npolicy:\n  ttl: -10s\nservices:\n  A: {}\n",
        ":3:8: ",
        &["policy.ttl", "negative"],
    );
}

#[test]
fn missing_entry() {
    rejects(
        "missing-entry",
        "name: t\nload:\n  entry: Z\n  rps: 200\nservices:\n  A: { calls: [B] }\n  B: {}\n",
        ":3:3: ",
        &[r#"load.entry is "Z", which is not in the topology"#],
    );
}

#[test]
fn ambiguous_entry() {
    rejects(
        "ambiguous-entry",
        "name: t\nservices:\n  A: { calls: [B] }\n  B: {}\n  C: {}\n",
        ": ",
        &["entry is ambiguous", r#""A", "C""#, "set load.entry"],
    );
}

#[test]
fn empty_fleet() {
    rejects(
        "empty-fleet",
        "name: t\nservices: {}\n",
        ":2:1: ",
        &["the fleet is empty"],
    );
    rejects(
        "no-services",
        "name: t\ndescription: nothing here\n",
        ": ",
        &["the fleet is empty"],
    );
}

#[test]
fn bad_yaml_syntax_has_line_and_column() {
    rejects(
        "syntax",
        "name: t\nservices:\n  A: { calls: [B]\n  B: {}\n",
        ":4:3: ",
        &["did not find expected ',' or '}'", "line 3 column 6"],
    );
    rejects(
        "indent",
        "name: t\nservices:\n  A:\n    calls: [B]\n  B:\n    fault: { error_rate: 0.1 }\n   work: 1ms\n",
        ":7:4: ",
        &["did not find expected key", r#"service "B""#],
    );
}

#[test]
fn unknown_field() {
    rejects(
        "unknown-field",
        "name: t\nservices:\n  A: { calls: [B] }\n  B:\n    fault: { eror_rate: 0.5 }\n",
        ":5:14: ",
        &[
            "services.B.fault",
            "unknown field `eror_rate`",
            "expected one of `error_rate`",
        ],
    );
    rejects(
        "unknown-top-level",
        "name: t\nservics:\n  A: {}\n",
        ":2:1: ",
        &["unknown field `servics`"],
    );
}

#[test]
fn wrong_types_and_values() {
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (
            "attempts-zero",
            "name: t\npolicy: { attempts: 0 }\nservices:\n  A: {}\n",
            ":2:21: ",
            &["policy.attempts", "at least 1"],
        ),
        (
            "status",
            "name: t\nservices:\n  A:\n    fault: { status: 700 }\n",
            ":4:22: ",
            &["services.A.fault.status", "from 100 to 599"],
        ),
        (
            "rps-zero",
            "name: t\nload: { rps: 0 }\nservices:\n  A: {}\n",
            ":2:14: ",
            &["load.rps", "positive"],
        ),
        (
            "capacity-negative",
            "name: t\nservices:\n  A: { capacity: -3 }\n",
            ":3:18: ",
            &["services.A.capacity", "positive"],
        ),
        (
            "https-url",
            "name: t\nservices:\n  A: { calls: [B] }\n  B: { url: \"https://example.com\" }\n",
            ":4:13: ",
            &["services.B.url", "http://"],
        ),
        (
            "header",
            "name: t\nownership: { header: \"x claim\" }\nservices:\n  A: {}\n",
            ":2:22: ",
            &["ownership.header", "not a valid HTTP header name"],
        ),
        (
            "context",
            "name: t\nservices:\n  A: { context: lost }\n",
            ":3:17: ",
            &["services.A.context", "unknown variant `lost`", "`dropped`"],
        ),
        (
            "mode",
            "name: t\nservices:\n  A:\n    calls:\n      - { to: B, mode: sometimes }\n  B: {}\n",
            ":5:24: ",
            &["services.A.calls[0].mode", "`fail-close` or `fail-open`"],
        ),
        (
            "budget",
            "name: t\npolicy: { budget: lots }\nservices:\n  A: {}\n",
            ":2:19: ",
            &["policy.budget", "`off`"],
        ),
        (
            "missing-name",
            "services:\n  A: {}\n",
            ":1:1: ",
            &["missing field `name`"],
        ),
        (
            "url-with-calls",
            "name: t\nservices:\n  A: { calls: [B] }\n  B: { url: \"http://127.0.0.1:9\", calls: [C] }\n  C: {}\n",
            ":4:3: ",
            &[r#"service "B" has a url"#],
        ),
    ];
    for (label, yaml, at, needles) in cases {
        rejects(label, yaml, at, needles);
    }
}

#[test]
fn overload_keys_say_why_they_make_no_sense() {
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (
            "workers-zero",
            "name: t\nservices:\n  A: { calls: [DB] }\n  DB: { workers: 0 }\n",
            ":4:18: ",
            &["services.DB.workers", "at least 1", "never serves"],
        ),
        (
            "queue-negative",
            "name: t\nservices:\n  DB: { workers: 4, queue: -5 }\n",
            ":3:28: ",
            &["services.DB.queue", "from 0 to 1000000"],
        ),
        (
            "queue-absurd",
            "name: t\nservices:\n  DB: { workers: 4, queue: 1e9 }\n",
            ":3:28: ",
            &["services.DB.queue", "from 0 to 1000000"],
        ),
        (
            "queue-without-workers",
            "name: t\nservices:\n  A: { calls: [DB] }\n  DB:\n    work: 25ms\n    queue: 10\n",
            ":6:5: ",
            &[
                r#"service "DB" sets `queue` but not `workers`"#,
                "no request ever waits",
            ],
        ),
        // SPEC section 15: an adaptive concurrency controller.
        (
            "concurrency-word",
            "name: t\nservices:\n  DB: { concurrency: gradiant }\n",
            ":3:22: ",
            &[
                "unknown concurrency controller `gradiant`",
                "did you mean `gradient`?",
            ],
        ),
        (
            "concurrency-stray-number",
            "name: t\nservices:\n  DB:\n    concurrency: { controller: vegas, buffer: 0.5 }\n",
            ":4:",
            &["`buffer` is not a number of the `vegas` controller"],
        ),
        (
            "concurrency-bounds",
            "name: t\nservices:\n  DB:\n    concurrency: { controller: aimd, min: 50, max: 10 }\n",
            ":4:",
            &["max (10) is below min (50)"],
        ),
        (
            "cancel-without-workers",
            "name: t\nservices:\n  DB: { cancel: true }\n",
            ":3:9: ",
            &[r#"service "DB" sets `cancel` but not `workers`"#],
        ),
        (
            "url-with-workers",
            "name: t\nservices:\n  A: { calls: [B] }\n  B: { url: \"http://127.0.0.1:9\", workers: 2 }\n",
            ":4:35: ",
            &[r#"service "B" has a url"#, "`workers`"],
        ),
        (
            "user-timeout-zero",
            "name: t\nload: { rps: 10, timeout: 0s }\nservices:\n  A: {}\n",
            ":2:27: ",
            &["load.timeout", "more than 0"],
        ),
        (
            "attempt-outlives-user",
            "name: t\nload:\n  timeout: 1s\npolicy:\n  attempts: 3\n  timeout: 2s\nservices:\n  A: { calls: [B] }\n  B: {}\n",
            ":6:3: ",
            &[
                "A -> B is 2s, not shorter than load.timeout 1s",
                "after the end user has given up",
            ],
        ),
        (
            "deadline-word",
            "name: t\npolicy: { deadline: always }\nservices:\n  A: {}\n",
            ":2:21: ",
            &["policy.deadline", "`propagate` or `off`"],
        ),
    ];
    for (label, yaml, at, needles) in cases {
        rejects(label, yaml, at, needles);
    }
}

#[test]
fn empty_file() {
    rejects("empty", "", ": ", &["the file is empty"]);
    rejects(
        "comments",
        "# nothing yet\n\n",
        ": ",
        &["the file is empty"],
    );
}

#[test]
fn yaml_list() {
    rejects(
        "list",
        "- name: t\n- services: {}\n",
        ": ",
        &["must be a YAML map", "holds a list"],
    );
}

#[test]
fn nonexistent_path() {
    let path = std::env::temp_dir().join(format!(
        "chaoslab-{}-no-such-topology.yaml",
        std::process::id()
    ));
    let path = path.to_str().expect("utf-8 temp path");
    let out = common::chaoslab(&["check", path]);
    let (_, stderr) = common::text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(path), "{stderr}");
    assert!(stderr.contains("cannot read the topology"), "{stderr}");
}

#[test]
fn every_shipped_topology_checks() {
    let dir = common::root().join("topologies");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("topologies/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 8,
        "expected the shipped topologies, got {files:?}"
    );
    for f in files {
        let rel = f.strip_prefix(common::root()).expect("under the root");
        let rel = rel.to_str().expect("utf-8 path");
        let out = common::chaoslab(&["check", rel]);
        let (stdout, stderr) = common::text(&out);
        assert_eq!(out.status.code(), Some(0), "{rel}: {stderr}");
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        assert!(
            stdout.contains(&format!("topology   {stem}")),
            "{rel}: name should match the file:\n{stdout}"
        );
        assert!(stdout.contains("about"), "{rel}: no description:\n{stdout}");
        assert!(stdout.contains("static storm radius"), "{rel}:\n{stdout}");
    }
}

#[test]
fn uber_chain_shows_depths_multiplicities_and_radius() {
    let out = common::chaoslab(&["check", "topologies/uber-chain.yaml"]);
    let (stdout, stderr) = common::text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("entry      A at 200 rps"), "{stdout}");
    assert!(
        stdout.contains("policy     ownership: attempts 2, budget 0.1"),
        "{stdout}"
    );
    for (depth, name) in ["A", "B", "C", "D", "E", "F", "G"].iter().enumerate() {
        let row = stdout
            .lines()
            .find(|l| {
                let cells: Vec<&str> = l.split_whitespace().collect();
                cells.len() >= 2 && cells[1] == *name && cells[0] == depth.to_string()
            })
            .unwrap_or_else(|| panic!("no row for {name} at depth {depth}:\n{stdout}"));
        assert!(row.contains(" 1x "), "{name}'s baseline: {row}");
    }
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_default()
    };
    assert!(row("D").contains("error_rate 1 (after)"), "{}", row("D"));
    assert!(row("G").contains("work 1ms"), "{}", row("G"));
    assert!(stdout.contains("ownership  1 "), "{stdout}");
    assert!(stdout.contains("retry      6 (when G fails)"), "{stdout}");
}

#[test]
fn fanout_multiplicities_count_repeated_calls() {
    let out = common::chaoslab(&["check", "topologies/fanout.yaml"]);
    let (stdout, stderr) = common::text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for (name, mult) in [("cart", "2x"), ("inventory", "2x"), ("shard1", "1x")] {
        let row = stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{stdout}"));
        assert!(row.contains(&format!(" {mult} ")), "{name}: {row}");
    }
    assert!(stdout.contains("cart x2"), "{stdout}");
    assert!(stdout.contains("recs (fail-open) [attempts 1]"), "{stdout}");
    assert!(stdout.contains("parallel"), "{stdout}");
}

/// SPEC section 8: unknown preset, model and signal names get a
/// did-you-mean; ratios outside 0..1, negative quotas and token counts,
/// and a bad breaker say which key and why. All exit 2 with file:line:col.
#[test]
fn industry_policy_fields_say_where_and_what() {
    let file = |policy: &str| format!("name: t\npolicy: {policy}\nservices:\n  A: {{}}\n");
    rejects(
        "preset",
        &file("{ preset: finagel }"),
        ":2:19: ",
        &[
            "policy.preset",
            "unknown preset `finagel`",
            "did you mean `finagle`?",
        ],
    );
    rejects(
        "model",
        &file("{ budget_model: token }"),
        ":2:25: ",
        &["unknown budget_model `token`", "did you mean `tokens`?"],
    );
    rejects(
        "signal",
        &file("{ signal: pushbak }"),
        ":2:19: ",
        &["unknown signal `pushbak`", "did you mean `pushback`?"],
    );
    rejects(
        "ratio",
        &file("{ token_ratio: 1.5 }"),
        ":2:24: ",
        &["token_ratio must be a number from 0 to 1, got 1.5"],
    );
    rejects(
        "percent",
        &file("{ budget_percent: 120 }"),
        ":2:27: ",
        &["budget_percent must be a number from 0 to 100, got 120"],
    );
    rejects(
        "quota",
        &file("{ quota: -500 }"),
        ":2:18: ",
        &["quota must be a whole number from 0 to 1000000, got -500"],
    );
    rejects(
        "tokens",
        &file("{ max_tokens: -1 }"),
        ":2:23: ",
        &["max_tokens must be a whole number from 1 to 1000, got -1"],
    );
    rejects(
        "breaker",
        &file("{ breaker: { failure_ratio: 2 } }"),
        ":2:",
        &["failure_ratio must be a number from 0 to 1, got 2"],
    );
    rejects(
        "breaker-key",
        &file("{ breaker: { opens_after: 3 } }"),
        ":2:",
        &["unknown field `opens_after`"],
    );
    // SPEC section 15's throttle: K above 0, a window no shorter than the
    // lab's one-second tick.
    rejects(
        "throttle-k",
        &file("{ throttle: { k: 0 } }"),
        ":2:",
        &["k must be above 0 and at most 100 (the SRE book's is 2), got 0"],
    );
    rejects(
        "throttle-k-negative",
        &file("{ preset: sre, throttle: { k: -2 } }"),
        ":2:",
        &["k must be above 0", "got -2"],
    );
    rejects(
        "throttle-window",
        &file("{ throttle: { window: 500ms } }"),
        ":2:",
        &["window must be at least 1s, the lab's sampling tick, got 500ms"],
    );
    rejects(
        "hedge-zero-delay",
        &file("{ hedge: { delay: 0ms, max_attempts: 3 } }"),
        ":2:",
        &["hedge: a delay of 0 with max_attempts 3 sends every hedge at once"],
    );
    rejects(
        "hedge-attempts",
        &file("{ hedge: { max_attempts: 9 } }"),
        ":2:",
        &["max_attempts must be a whole number from 1 to 5, got 9"],
    );
    rejects(
        "throttle-word",
        &file("{ throttle: sometimes }"),
        ":2:",
        &["throttle must be `on`, `off` or a map (k, window), got `sometimes`"],
    );
}

/// SPEC section 15's closed loop: at least one client, a think time of
/// at least a millisecond (clients ÷ think is the baseline), and a root is
/// either open (`rps:`) or closed (`clients:`).
#[test]
fn closed_loop_clients_that_cannot_be() {
    let file = |load: &str| format!("name: t\nload: {load}\nservices:\n  A: {{}}\n");
    rejects(
        "clients-zero",
        &file("{ clients: 0 }"),
        ":2:18: ",
        &["clients must be a whole number from 1 to 10000, got 0"],
    );
    rejects(
        "clients-fraction",
        &file("{ clients: 2.5 }"),
        ":2:18: ",
        &["clients must be a whole number from 1 to 10000, got 2.5"],
    );
    rejects(
        "think-zero",
        &file("{ clients: 5, think: 0s }"),
        ":2:",
        &["think must be from 1ms to 1h, got `0s`"],
    );
    rejects(
        "clients-and-rps",
        &file("{ clients: 5, rps: 10 }"),
        ":2:",
        &[
            "load: give either `rps:` (open loop",
            "not both (here rps: 10, clients: 5)",
        ],
    );
    rejects(
        "think-alone",
        &file("{ think: 100ms }"),
        ":2:",
        &["load.think: a think time is for closed-loop clients: give `clients:` too"],
    );
    rejects(
        "entry-clients-and-rps",
        "name: t\nload:\n  entries:\n    - { entry: A, clients: 5, rps: 3 }\nservices:\n  A: {}\n",
        ":3:",
        &["load.entries[0]: give either `rps:`"],
    );
}

#[test]
fn a_call_share_outside_zero_to_one() {
    for (label, p) in [("p-over", "1.5"), ("p-under", "-0.1"), ("p-text", "half")] {
        let yaml = format!(
            "name: t\nservices:\n  A:\n    calls:\n      - {{ to: B, p: {p} }}\n  B: {{}}\n"
        );
        let want = if p == "half" {
            "p needs the share of requests that make the call, between 0 and 1"
        } else {
            "p must be the share of requests that make the call, between 0 and 1"
        };
        rejects(label, &yaml, ":5:21: ", &["services.A.calls[0].p", want]);
    }
}

#[test]
fn replicas_that_cannot_be() {
    rejects(
        "replicas-zero",
        "name: t\nservices:\n  A:\n    replicas: 0\n",
        ":4:15: ",
        &["services.A.replicas", "replicas must be at least 1"],
    );
    rejects(
        "replicas-many",
        "name: t\nservices:\n  A:\n    replicas: 5000\n",
        ":4:15: ",
        &["services.A.replicas", "1000"],
    );
    rejects(
        "replica-out-of-range",
        "name: t\nservices:\n  A:\n    replicas: 3\n    fault: { error_rate: 1.0, replicas: [0, 3] }\n",
        ":5:5: ",
        &[
            "services.A.fault.replicas names replica 3",
            "\"A\" has 3 replicas (numbered 0 to 2)",
        ],
    );
    rejects(
        "replicas-none-named",
        "name: t\nservices:\n  A:\n    replicas: 3\n    fault: { error_rate: 1.0, replicas: [] }\n",
        ":5:5: ",
        &["services.A.fault.replicas is empty", "leave the key out"],
    );
    rejects(
        "replica-of-one",
        "name: t\nservices:\n  A:\n    fault: { error_rate: 1.0, replicas: [1] }\n",
        ":4:5: ",
        &["names replica 1", "has 1 replica (numbered 0 to 0)"],
    );
    rejects(
        "replicas-outside",
        "name: t\nservices:\n  A: { calls: [B] }\n  B: { url: \"http://127.0.0.1:9/\", replicas: 2 }\n",
        ":4:",
        &["service \"B\" has a url", "remove `replicas:`"],
    );
    rejects(
        "lb-unknown",
        "name: t\npolicy: { lb: fastest }\nservices:\n  A: {}\n",
        ":2:",
        &["policy.lb", "round-robin", "random", "p2c"],
    );
}

#[test]
fn roots_that_cannot_be() {
    let two = "services:\n  web: { calls: [db] }\n  mobile: { calls: [db] }\n  db: {}\n";
    rejects(
        "root-unknown",
        &format!("name: t\nload:\n  entries:\n    - {{ entry: web, rps: 10 }}\n    - {{ entry: mobil, rps: 5 }}\n{two}"),
        ":3:3: ",
        &["load.entries[1].entry", "no service \"mobil\"", "did you mean \"mobile\"?"],
    );
    rejects(
        "root-twice",
        &format!(
            "name: t\nload:\n  entries:\n    - {{ entry: web }}\n    - {{ entry: web }}\n{two}"
        ),
        ":3:3: ",
        &["load.entries[1]", "already a root (load.entries[0])"],
    );
    rejects(
        "root-and-entry",
        &format!("name: t\nload:\n  entry: web\n  entries:\n    - {{ entry: web }}\n{two}"),
        ":4:3: ",
        &["either as `entries:`", "not both"],
    );
    rejects(
        "roots-empty",
        &format!("name: t\nload:\n  entries: []\n{two}"),
        ":3:3: ",
        &["the list is empty"],
    );
    rejects(
        "root-rate-zero",
        &format!("name: t\nload:\n  entries:\n    - {{ entry: web, rps: 0 }}\n{two}"),
        ":4:26: ",
        &["load.entries[0].rps", "positive"],
    );
}

/// SPEC section 17's keys: each mistake named where it is, with what
/// would be right.
#[test]
fn mesh_keys_say_where_and_what() {
    rejects(
        "retry-on-typo",
        "name: t\npolicy: { retry_on: [5xx, gateway-eror] }\nservices:\n  A:\n",
        ":2:",
        &[
            "unknown retry_on condition `gateway-eror`",
            "did you mean `gateway-error`",
        ],
    );
    rejects(
        "retry-on-status",
        "name: t\npolicy: { retry_on: [503, 700] }\nservices:\n  A:\n",
        ":2:",
        &["from 100 to 599, got 700"],
    );
    rejects(
        "own-status",
        "name: t\nservices:\n  A:\n    errors: { own: 99 }\n",
        ":4:",
        &["status must be a whole number from 100 to 599, got 99"],
    );
    rejects(
        "passed-word",
        "name: t\nservices:\n  A:\n    errors: { passed: sme }\n",
        ":4:",
        &["passed must be a status code from 100 to 599 or `same`, got `sme`"],
    );
    rejects(
        "sidecar-no-calls",
        "name: t\nservices:\n  A: { calls: [B] }\n  B:\n    sidecar: { kind: nginx }\n",
        ":5:5: ",
        &["B makes no calls, so a nginx sidecar would carry nothing"],
    );
    rejects(
        "sidecar-foreign-key",
        "name: t\nservices:\n  A:\n    calls: [B]\n    sidecar: { kind: haproxy, max_fails: 3 }\n  B:\n",
        ":5:31: ",
        &["haproxy has no `max_fails` (it is nginx's)"],
    );
    rejects(
        "sidecar-kind",
        "name: t\nservices:\n  A:\n    calls: [B]\n    sidecar: { kind: envoy }\n  B:\n",
        ":5:",
        &["unknown variant `envoy`", "nginx", "haproxy"],
    );
}
