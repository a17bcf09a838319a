//! Real sidecars (SPEC section 17): a real nginx or HAProxy carries each
//! caller's calls and makes every retry on them; the callee counts the
//! proxy's retries, and the figures are measured from the JSON report
//! against the model of what each proxy does. No proxy outlives its run,
//! however the run ends.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::{chaoslab, edge, fleet_lock, side_by_side, text, wait_until};
use crate::overload::topology_file;
use crate::signals::{signal, start, wait_for_line};
use crate::tables::{headless_report, node, num};

/// A→B→C→D, every caller behind a `kind` sidecar (`sidecar` is the rest
/// of its map), B, C and D of `replicas` each, every service answering
/// `errors`, D failing every request with `status`; `preset: retry`,
/// two attempts, `retry_on`.
fn chain(
    name: &str,
    sidecar: &str,
    replicas: u32,
    retry_on: &str,
    errors: &str,
    status: u16,
) -> String {
    topology_file(
        name,
        &format!(
            "name: {name}\nload: {{ rps: 100 }}\n\
             policy: {{ preset: retry, attempts: 2, retry_on: {retry_on} }}\n\
             services:\n  \
               A: {{ calls: [B], sidecar: {{ {sidecar} }}, errors: {errors} }}\n  \
               B: {{ calls: [C], replicas: {replicas}, sidecar: {{ {sidecar} }}, errors: {errors} }}\n  \
               C: {{ calls: [D], replicas: {replicas}, sidecar: {{ {sidecar} }}, errors: {errors} }}\n  \
               D: {{ replicas: {replicas}, fault: {{ error_rate: 1.0, status: {status} }}, errors: {errors} }}\n"
        ),
    )
}

/// Every condition but a status the lab's own services answer.
const MOST: &str = "[connect-failure, timeout, reset, 500, 502, 503]";
/// Ownership without code: each service's own error 503, a passed one 502.
const OWN_503: &str = "{ own: 503, passed: 502 }";

/// A short headless run of `file`: 5 s measured after 1 s.
fn run(file: &str) -> Value {
    headless_report(file, &["--duration", "5s", "--warmup", "1s"])
}

/// `name`'s amplification within 3% of `want`.
fn amplified(r: &Value, what: &str, name: &str, want: f64) {
    let a = num(node(r, name), "amplification");
    assert!(
        (a - want).abs() <= 0.03 * want,
        "{what}: {name} at {a:.4}x, want {want}x within 3%"
    );
}

/// Every service at the model's amplification within 3%, and the model
/// at `want`.
fn at_the_model(r: &Value, what: &str, want: [f64; 4]) {
    for (name, want) in ["A", "B", "C", "D"].into_iter().zip(want) {
        let model = num(node(r, name), "model_amplification");
        assert!(
            (model - want).abs() < 1e-9,
            "{what}: the model puts {name} at {model}x, the proxy's rules at {want}x"
        );
        amplified(r, what, name, model);
    }
    // 5 s at 100 root requests a second.
    assert!(
        num(&r["root"], "requests") >= 450.0,
        "{what}: {}",
        r["root"]
    );
}

/// Each edge's retries per root request, counted at the callee from the
/// call numbers the proxy passed through, within 3% of the model's; the
/// storm radius, kept by the trace's root the proxy passed through too,
/// the model's.
fn retries_at_the_model(r: &Value, what: &str) {
    let roots = num(&r["root"], "requests");
    for (from, to) in [("A", "B"), ("B", "C"), ("C", "D")] {
        let e = edge(r, from, to);
        let (got, want) = (num(e, "retries") / roots, num(e, "model_retries_per_root"));
        assert!(
            (got - want).abs() <= 0.03 * want.max(1.0),
            "{what}: {from} -> {to} {got:.3} retries per root request, the model {want}"
        );
    }
    assert_eq!(
        r["storm_radius"]["max"], r["storm_radius"]["model"],
        "{what}: {}",
        r["storm_radius"]
    );
}

/// nginx, each callee of two replicas, `max_fails: 0`: every hop retries
/// D's 500 once (each server at most once), so D takes 8× the entry's
/// requests. With each service's own error 503 and a passed one 502 and
/// only 503 retried, only C's nginx (right above D, the owner) retries:
/// D at 2×, C and B at 1×, with no retry library anywhere.
#[test]
fn nginx_over_two_replicas_retries_every_hop_or_only_above_the_owner() {
    let _fleet = fleet_lock();
    let nginx = "kind: nginx, max_fails: 0";
    let files = vec![
        chain("nginx-500", nginx, 2, MOST, "{ passed: 500 }", 500),
        chain("nginx-503", nginx, 2, "[503]", OWN_503, 503),
    ];
    // Side by side: two chains at 100 root requests a second, three
    // nginx each (measured together: 0.5 of a core).
    let reports = side_by_side(files, |f| run(&f));
    let (all, owner) = (&reports[0], &reports[1]);
    at_the_model(all, "500 retried", [1.0, 2.0, 4.0, 8.0]);
    retries_at_the_model(all, "500 retried");
    at_the_model(owner, "only 503 retried", [1.0, 1.0, 1.0, 2.0]);
    retries_at_the_model(owner, "only 503 retried");
    assert_eq!(owner["storm_radius"]["max"], 1, "{}", owner["storm_radius"]);
}

/// nginx passes a request to the next server, each at most once: over
/// one replica it never retries, whatever `attempts` says.
#[test]
fn nginx_over_one_replica_never_retries() {
    let _fleet = fleet_lock();
    let r = run(&chain(
        "nginx-one",
        "kind: nginx, max_fails: 0",
        1,
        MOST,
        "{ passed: 500 }",
        500,
    ));
    at_the_model(&r, "one replica", [1.0, 1.0, 1.0, 1.0]);
    for (from, to) in [("A", "B"), ("B", "C"), ("C", "D")] {
        assert_eq!(num(edge(&r, from, to), "retries"), 0.0, "{from} -> {to}");
    }
}

/// HAProxy with `retries 1` retries the same server: over one replica
/// every hop retries D's 500 once (D at 8×); with `retry-on 503` and
/// each service's own error 503, a passed one 502, only C's does (D at
/// 2×).
#[test]
fn haproxy_retries_the_same_server_every_hop_or_only_above_the_owner() {
    let _fleet = fleet_lock();
    let files = vec![
        chain(
            "haproxy-500",
            "kind: haproxy",
            1,
            "[500, 502, 503]",
            "{ passed: 500 }",
            500,
        ),
        chain("haproxy-503", "kind: haproxy", 1, "[503]", OWN_503, 503),
    ];
    // Side by side: two chains at 100 root requests a second, three
    // HAProxy each (measured together: 0.4 of a core).
    let reports = side_by_side(files, |f| run(&f));
    let (all, owner) = (&reports[0], &reports[1]);
    at_the_model(all, "500 retried", [1.0, 2.0, 4.0, 8.0]);
    retries_at_the_model(all, "500 retried");
    at_the_model(owner, "only 503 retried", [1.0, 1.0, 1.0, 2.0]);
    retries_at_the_model(owner, "only 503 retried");
}

/// A run that needs a proxy this machine lacks exits 2 and says how to
/// install it (the program's path given by its variable, here a path
/// where there is none); one whose policy the proxy cannot express exits
/// 2 naming the edge.
#[test]
fn a_missing_proxy_or_a_policy_it_cannot_express_exits_2() {
    let _fleet = fleet_lock();
    for (kind, var, package) in [
        ("nginx", "CHAOSLAB_NGINX", "nginx-light"),
        ("haproxy", "CHAOSLAB_HAPROXY", "haproxy"),
    ] {
        let file = chain(
            &format!("{kind}-missing"),
            &format!("kind: {kind}"),
            1,
            "[500]",
            "{ passed: 500 }",
            500,
        );
        let out = Command::new(env!("CARGO_BIN_EXE_chaoslab"))
            .args(["run", &file, "--headless", "--duration", "2s"])
            .env(var, "/nonexistent/sbin/proxy")
            .output()
            .unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{kind}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{kind} is not installed: apt-get install {package}"
            )),
            "{stderr}"
        );
    }
    // The default policy runs a retry budget, which nginx has not.
    let file = topology_file(
        "nginx-budget",
        "name: b\nservices:\n  A: { calls: [B], sidecar: { kind: nginx } }\n  B: {}\n",
    );
    let out = chaoslab(&["run", &file, "--headless", "--duration", "2s"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("A -> B: A's nginx sidecar cannot express its retry budget"),
        "{stderr}"
    );
    // A scenario's policy change would reach the lab's clients and not
    // the proxy, whose configuration was written at the start: refused
    // where it is written, before anything starts.
    let file = topology_file(
        "nginx-policy-step",
        "name: s\npolicy: { preset: retry }\nservices:\n  A: { calls: [B], sidecar: { kind: nginx } }\n  B: {}\nscenario:\n  duration: 2s\n  steps:\n    - { at: 1s, policy: ownership }\n",
    );
    let out = chaoslab(&["run", &file, "--headless"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "steps[0].policy: service \"A\" carries its calls through a real nginx sidecar"
        ),
        "{stderr}"
    );
}

/// The sidecar processes of the chaoslab process `pid`, by the directory
/// their command lines name.
fn proxies_of(pid: u32) -> Vec<String> {
    let out = Command::new("pgrep")
        .args(["-af", &format!("chaoslab-sidecar-{pid}-")])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("nginx") || l.contains("haproxy"))
        .map(str::to_string)
        .collect()
}

/// No proxy is left once its run has ended: by SIGINT, by SIGTERM, by a
/// second SIGINT (which exits at once), by SIGKILL (the kernel kills the
/// proxies with their parent), and by an error after the fleet started
/// (the metrics port taken).
#[test]
fn no_proxy_outlives_its_run() {
    let _fleet = fleet_lock();
    let file = topology_file(
        "leftovers",
        "name: leftovers\nload: { rps: 20 }\npolicy: { preset: retry }\nservices:\n  \
         A: { calls: [B], sidecar: { kind: nginx, max_fails: 0 } }\n  \
         B: { calls: [C], sidecar: { kind: haproxy } }\n  C: {}\n",
    );
    let mut killed = 0;
    for (how, signals, code) in [
        ("SIGINT", &["INT"][..], Some(130)),
        ("SIGTERM", &["TERM"], Some(143)),
        ("a second SIGINT", &["INT", "INT"], Some(130)),
        ("SIGKILL", &["KILL"], None),
    ] {
        let (mut child, lines) = start(&["run", &file, "--headless", "--duration", "30s"]);
        let pid = child.0.id();
        let mut out = vec![];
        wait_for_line(&lines, &mut out, "a progress line", |l| l.starts_with('['));
        let running = proxies_of(pid);
        assert_eq!(running.len(), 2, "{how}: {running:?}");
        for s in signals {
            signal(pid, s);
        }
        let status = child.0.wait().unwrap();
        assert_eq!(status.code(), code, "{how}");
        killed = pid;
        // The kernel's parent death signal is sent as the parent goes.
        wait_until(
            Duration::from_secs(3),
            &format!("no proxy after {how}"),
            || proxies_of(pid).is_empty().then_some(()),
        );
    }
    // An error once the fleet (and its sidecars) started: the metrics
    // port is taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_chaoslab"))
        .args([
            "run",
            &file,
            "--headless",
            "--duration",
            "30s",
            "--metrics",
            &port,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&port), "{stderr}");
    assert!(
        proxies_of(pid).is_empty(),
        "after the error: {:?}",
        proxies_of(pid)
    );
    let dirs: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|d| {
            d.file_name()
                .to_string_lossy()
                .starts_with(&format!("chaoslab-sidecar-{pid}-"))
        })
        .collect();
    assert!(dirs.is_empty(), "their directories are removed: {dirs:?}");
    // The run killed outright removed nothing; the next run that started
    // a sidecar swept its directories away.
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|d| {
            d.file_name()
                .to_string_lossy()
                .starts_with(&format!("chaoslab-sidecar-{killed}-"))
        })
        .collect();
    assert!(left.is_empty(), "left by the run killed outright: {left:?}");
}

/// nginx's passive health check: B's two replicas fail every request, so
/// nginx takes each out after `max_fails` failed attempts for
/// `fail_timeout` (and up to a second more); a server's first try back
/// that is a call's last try clears its failures. The model plays those
/// rules: `max_fails` + 2 attempts per 2 s here, whatever the load (100
/// calls a second), and every call fails, most at nginx with its 502.
/// Measured over 8 s, within one period's attempts.
#[test]
fn nginx_takes_failing_servers_out_as_the_model_plays_it() {
    let _fleet = fleet_lock();
    let files: Vec<(u32, String)> = [1, 2, 3]
        .into_iter()
        .map(|max_fails| {
            let file = topology_file(
                &format!("nginx-max-fails-{max_fails}"),
                &format!(
                    "name: mf{max_fails}\nload: {{ rps: 100 }}\npolicy: {{ preset: retry, attempts: 2 }}\nservices:\n  \
                     A: {{ calls: [B], sidecar: {{ kind: nginx, max_fails: {max_fails}, fail_timeout: 1s }} }}\n  \
                     B: {{ replicas: 2, fault: {{ error_rate: 1.0 }} }}\n"
                ),
            );
            (max_fails, file)
        })
        .collect();
    // Side by side: three chains of two at 100 root requests a second,
    // nearly every call answered by nginx at once (0.1 of a core).
    let reports = side_by_side(files, |(mf, f)| {
        (
            mf,
            headless_report(&f, &["--duration", "8s", "--warmup", "2s"]),
        )
    });
    for (max_fails, r) in &reports {
        let roots = num(&r["root"], "requests");
        let b = node(r, "B");
        let (got, model) = (
            num(b, "amplification") * roots,
            num(b, "model_amplification") * roots,
        );
        let period = f64::from(max_fails + 2);
        assert!(
            (model - 4.0 * period).abs() < 0.5,
            "max_fails {max_fails}: the model sends {model} attempts in 8 s, nginx's rules {}",
            4.0 * period
        );
        assert!(
            (got - model).abs() <= period,
            "max_fails {max_fails}: B took {got} attempts in 8 s, the model {model:.1} (± {period})"
        );
        assert_eq!(r["root"]["availability"], 0.0);
    }
}
