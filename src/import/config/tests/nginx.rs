//! nginx.conf against a table written from nginx's documentation (the
//! proxy module's `proxy_next_upstream*`, the upstream module's `server`
//! parameters) and RETRY-CONFIGS.md: each server tried at most once.

use serde_yaml::Value;

use super::{noted as has_note, rules, yaml};
use crate::import::config::{onto, read, BadInput, ConfigFormat, File};

fn fixture(name: &str) -> File {
    super::short_fixture(&format!("nginx/{name}"))
}

#[test]
fn nginx_backup_servers_count_in_the_tries_and_http_settings_are_inherited() {
    let r = read(ConfigFormat::Nginx, &[fixture("reviews.conf")]).unwrap();
    // `error timeout` is the lab's `reset`; tries 0 = one per server, the
    // backup included; proxy_read_timeout from `http`.
    let want = vec![(
        "ratings".to_string(),
        Some("reviews".to_string()),
        yaml("{ preset: retry, attempts: 3, retry_on: [reset, 503], backoff: 0ms, timeout: 2s }"),
        24,
    )];
    assert_eq!(rules(&r), want);
    assert_eq!(r.services.len(), 1);
    let sc = &r.services[0];
    assert_eq!((sc.host.as_str(), sc.source.line), ("reviews", 11));
    assert_eq!(
        sc.set,
        yaml("{ sidecar: { kind: nginx, max_fails: 3, fail_timeout: 30s } }")
    );
    has_note(&r, 13, "`backup`");
    has_note(&r, 13, "max_fails=1 fail_timeout=10s: not mapped");
    has_note(&r, 20, "proxy_connect_timeout");
    has_note(&r, 28, "not taken");
    // The caller was named by the comment: no guess listed.
    assert!(!r.notes.iter().any(|n| n.text.contains("taken to be")));
}

#[test]
fn nginx_defaults_apply_where_the_file_is_silent() {
    let r = read(ConfigFormat::Nginx, &[fixture("productpage.conf")]).unwrap();
    let from = Some("productpage".to_string());
    let want = vec![
        // Every server names one host: that host is the callee; the down
        // server is not tried; random two least_conn is p2c.
        (
            "reviews.bookinfo.svc.cluster.local".to_string(),
            from.clone(),
            yaml("{ preset: retry, attempts: 2, retry_on: [500, 502], backoff: 0ms, lb: p2c }"),
            22,
        ),
        // Tries 5 from `http` over two servers: 2; nginx's default
        // conditions `error timeout`.
        (
            "details".to_string(),
            from,
            yaml("{ preset: retry, attempts: 2, retry_on: [reset], backoff: 0ms }"),
            15,
        ),
    ];
    assert_eq!(rules(&r), want);
    assert_eq!(
        r.services[0].set,
        yaml("{ sidecar: { kind: nginx, max_fails: 1, fail_timeout: 10s } }")
    );
    assert_eq!(
        (r.services[0].host.as_str(), r.services[0].source.line),
        ("productpage", 7)
    );
    has_note(&r, 1, "sidecar of productpage, from the file's name");
    has_note(&r, 5, "weights 3, 1");
    has_note(&r, 9, "`down`");
    has_note(&r, 13, "max_fails=0");
    has_note(&r, 21, "non_idempotent");
    has_note(&r, 26, "proxy_next_upstream_timeout");
}

#[test]
fn nginx_names_the_caller_from_server_name_last() {
    let text = "http { upstream b { server b1:80; server b2:80; }\n server { server_name _ a.shop;\n location / { proxy_pass http://b; proxy_next_upstream off; } } }\n";
    let r = read(
        ConfigFormat::Nginx,
        &[File {
            name: "conf.d/nginx.conf".into(),
            text: text.into(),
        }],
    )
    .unwrap();
    assert_eq!(r.rules[0].from.as_deref(), Some("a.shop"));
    assert_eq!(r.rules[0].host, "b");
    assert_eq!(
        r.rules[0].policy,
        yaml("{ preset: retry, attempts: 1, retry_on: [], backoff: 0ms }")
    );
    has_note(&r, 2, "from its `server_name`");
    let err = read(
        ConfigFormat::Nginx,
        &[File {
            name: "nginx.conf".into(),
            text: "http { server { location / { proxy_pass http://b; } } }\n".into(),
        }],
    )
    .unwrap_err();
    assert!(err.why.contains("chaoslab: service"), "{err}");
}

fn bad(text: &str) -> BadInput {
    read(
        ConfigFormat::Nginx,
        &[File {
            name: "a.conf".into(),
            text: text.into(),
        }],
    )
    .unwrap_err()
}

#[test]
fn nginx_a_block_never_closed_names_its_line() {
    let e = bad("http {\n  server {\n    location / {\n      proxy_pass http://b;\n  }\n}\n");
    assert_eq!((e.at.file.as_str(), e.at.line), ("a.conf", 1), "{e}");
    assert!(e.why.contains("never closed"), "{e}");
}

#[test]
fn nginx_a_stray_brace_names_its_line() {
    let e = bad("http {\n}\n}\n");
    assert_eq!(e.at.line, 3, "{e}");
    assert!(e.why.contains("unexpected `}`"), "{e}");
}

#[test]
fn nginx_a_missing_semicolon_names_its_line() {
    let e = bad("http {\n  server {\n    location / {\n      proxy_pass http://b\n    }\n  }\n}\n");
    assert_eq!(e.at.line, 4, "{e}");
    assert!(e.why.contains("not ended by `;`"), "{e}");
}

#[test]
fn nginx_an_unknown_condition_names_its_line() {
    let e = bad("http {\n  proxy_next_upstream error http_501;\n}\n");
    assert_eq!(e.at.line, 2, "{e}");
    assert!(e.why.contains("http_501"), "{e}");
}

#[test]
fn nginx_bad_tries_and_server_parameters_name_their_lines() {
    let e = bad("http {\n  proxy_next_upstream_tries many;\n}\n");
    assert_eq!(e.at.line, 2, "{e}");
    let e = bad("http {\n  upstream b {\n    server b1:80 max_fails=x;\n  }\n}\n");
    assert_eq!(e.at.line, 3, "{e}");
    let e = bad("http {\n  proxy_read_timeout 5 parsecs;\n}\n");
    assert_eq!(e.at.line, 2, "{e}");
    let e = bad("http {\n  server_name \"unterminated;\n}\n");
    assert_eq!(e.at.line, 2, "{e}");
}

#[test]
fn nginx_onto_bookinfo_puts_the_sidecars_and_policies_on_their_calls() {
    let graph = super::fixture_text("tests/fixtures/config/bookinfo.yaml");
    let r = read(
        ConfigFormat::Nginx,
        &[fixture("productpage.conf"), fixture("reviews.conf")],
    )
    .unwrap();
    let w = onto(ConfigFormat::Nginx, &r, &graph, "bookinfo.yaml").unwrap();
    // onto checked it; check again, as `chaoslab run` would read it.
    crate::topology::Topology::from_yaml(&w.yaml, "out.yaml").unwrap();
    let doc: Value = serde_yaml::from_str(&w.yaml).unwrap();
    let svc = |name: &str| doc["services"][name].clone();
    let call = |from: &str, to: &str| {
        svc(from)["calls"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|c| c["to"].as_str() == Some(to))
            .cloned()
            .unwrap_or_else(|| panic!("{from} -> {to} not in {}", w.yaml))
    };
    assert_eq!(svc("productpage")["sidecar"]["kind"], "nginx");
    assert_eq!(svc("productpage")["sidecar"]["max_fails"], 1);
    assert_eq!(svc("reviews")["sidecar"]["max_fails"], 3);
    assert_eq!(svc("reviews")["sidecar"]["fail_timeout"], "30s");
    assert!(svc("ratings").get("sidecar").is_none());
    assert!(svc("details").get("sidecar").is_none());
    assert_eq!(call("productpage", "reviews")["policy"]["attempts"], 2);
    assert_eq!(call("productpage", "reviews")["policy"]["lb"], "p2c");
    assert_eq!(
        call("productpage", "reviews")["source"],
        "nginx/productpage.conf:22"
    );
    assert_eq!(call("productpage", "details")["policy"]["attempts"], 2);
    assert_eq!(call("reviews", "ratings")["policy"]["attempts"], 3);
    assert_eq!(
        call("reviews", "ratings")["source"],
        "nginx/reviews.conf:24"
    );
    assert!(w.yaml.contains("`backup`"), "{}", w.yaml);
}
