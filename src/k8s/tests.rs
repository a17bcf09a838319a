//! Tests of `k8s/mod.rs`.
use super::*;
use clap::Parser;

fn topology(text: &str) -> Topology {
    Topology::from_yaml(text, "t.yaml").unwrap()
}

fn args(extra: &[&str]) -> Request {
    let argv = ["chaoslab", "k8s", "t.yaml"].iter().chain(extra);
    match crate::cli::Opts::try_parse_from(argv)
        .unwrap()
        .into_command()
    {
        crate::cli::Command::K8s(a) => a.into(),
        other => panic!("{other:?}"),
    }
}

fn container_args(m: &Manifest) -> Vec<&str> {
    m.value["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

const OUTSIDE: &str = "name: Shop Front\nload: { rps: 50 }\nservices:\n  Gateway:\n    calls: [Cart, { to: Cart, count: 2 }, Pay]\n  Cart: {}\n  Pay: { url: \"http://pay.example:8000/\" }\n";

#[test]
fn each_node_gets_one_peer_per_started_dependency() {
    let t = topology(OUTSIDE);
    let docs = manifests(&t, OUTSIDE, &Options::new(&t)).unwrap();
    let kinds: Vec<_> = docs
        .iter()
        .map(|d| (d.file.as_str(), d.value["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("configmap.yaml", "ConfigMap"),
            ("secret.yaml", "Secret"),
            ("network-policy.yaml", "NetworkPolicy"),
            ("node-gateway.yaml", "Deployment"),
            ("node-gateway.yaml", "Service"),
            ("node-cart.yaml", "Deployment"),
            ("node-cart.yaml", "Service"),
            ("load-job.yaml", "Job"),
        ]
    );
    let gw = container_args(&docs[3]);
    assert_eq!(gw.iter().filter(|a| **a == "--peer").count(), 1, "{gw:?}");
    assert!(gw.contains(&"Cart=http://cart:8080/"), "{gw:?}");
    assert!(
        gw.windows(2).any(|w| w == ["--service", "Gateway"]),
        "{gw:?}"
    );
    assert!(
        gw.windows(2)
            .any(|w| w == ["--control-token-file", objects::TOKEN_FILE]),
        "{gw:?}"
    );
    assert!(
        gw.windows(2).any(|w| w == ["--control-host", "gateway"]),
        "{gw:?}"
    );
    assert_eq!(
        docs[1].value["stringData"]["token"].as_str().map(str::len),
        Some(32)
    );
    let job = container_args(&docs[7]);
    assert_eq!(
        job,
        [
            "load",
            TOPOLOGY_FILE,
            "--peer",
            "Gateway=http://gateway:8080/",
            "--rps",
            "50",
            "--duration",
            "60s"
        ]
    );
    assert_eq!(docs[0].value["metadata"]["name"], "shop-front-topology");
    assert_eq!(docs[7].value["metadata"]["name"], "shop-front-load");
    assert_eq!(
        docs[1].value["metadata"]["name"],
        "shop-front-control-token"
    );
    assert_eq!(docs[0].value["data"]["topology.yaml"], OUTSIDE);
    assert_eq!(loopback_notes(&t), Vec::<String>::new());
}

#[test]
fn flags_set_replicas_namespace_rate_and_duration() {
    let t = topology(OUTSIDE);
    let a = args(&[
        "--replicas",
        "Cart=3",
        "--namespace",
        "lab",
        "--rps",
        "12.5",
        "--duration",
        "90s",
        "--image",
        "ghcr.io/x/chaoslab:1",
    ]);
    let o = Options::from_request(&a, &t).unwrap();
    assert_eq!(o.replicas, [1, 3, 1]);
    let docs = manifests(&t, OUTSIDE, &o).unwrap();
    assert_eq!(docs[0].value["kind"], "Namespace");
    assert!(docs[1..]
        .iter()
        .all(|d| d.value["metadata"]["namespace"] == "lab"));
    let cart = &docs[6].value;
    assert_eq!(cart["spec"]["replicas"], 3);
    let pod = &cart["spec"]["template"];
    assert_eq!(
        pod["spec"]["containers"][0]["image"],
        "ghcr.io/x/chaoslab:1"
    );
    assert_eq!(
        pod["metadata"]["annotations"]["prometheus.io/scrape"],
        "true"
    );
    let job = container_args(docs.last().unwrap());
    assert!(
        job.ends_with(&["--rps", "12.5", "--duration", "90s"]),
        "{job:?}"
    );
    // In a namespace a driver may name a node by its qualified names.
    let cart_args = container_args(&docs[6]);
    for h in [
        "cart",
        "cart.lab",
        "cart.lab.svc",
        "cart.lab.svc.cluster.local",
    ] {
        assert!(
            cart_args.windows(2).any(|w| w == ["--control-host", h]),
            "{cart_args:?}"
        );
    }
}

#[test]
fn every_run_gets_a_fresh_token_unless_one_is_given() {
    let t = topology(OUTSIDE);
    let (a, b) = (
        Options::new(&t).control_token,
        Options::new(&t).control_token,
    );
    assert_ne!(a, b);
    assert_eq!(a.len(), 32);
    assert!(crate::session::Token::new(&a).is_ok());
    let file = std::env::temp_dir().join(format!("chaoslab-k8s-{}.token", std::process::id()));
    std::fs::write(&file, "given-token-0123456789\n").unwrap();
    let o = Options::from_request(&args(&["--control-token-file", file.to_str().unwrap()]), &t)
        .unwrap();
    assert_eq!(o.control_token, "given-token-0123456789");
    std::fs::write(&file, "short").unwrap();
    let e = Options::from_request(&args(&["--control-token-file", file.to_str().unwrap()]), &t)
        .unwrap_err();
    assert!(e.to_string().contains("at least 16"), "{e}");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn bad_flags_are_refused_with_what_to_write() {
    let t = topology(OUTSIDE);
    for (flags, needle) in [
        (&["--replicas", "Nope=2"][..], "no service `Nope`"),
        (&["--replicas", "Pay=2"], "outside service"),
        (&["--replicas", "Cart"], "no `=N`"),
        (&["--replicas", "Cart=-1"], "not a whole number"),
        (&["--replicas", "Cart=two"], "not a whole number"),
        (&["--replicas", "Cart=100000"], "more than 1000"),
        (
            &["--replicas", "Cart=1", "--replicas", "Cart=2"],
            "given twice",
        ),
        (&["--namespace", "Lab"], "--namespace"),
        (&["--image", "Not An Image"], "--image"),
    ] {
        let e = Options::from_request(&args(flags), &t)
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "{flags:?}: {e}");
    }
    // A rate the command line refuses itself, in the loader's words.
    let e = crate::cli::Opts::try_parse_from(["chaoslab", "k8s", "t.yaml", "--rps", "0"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("rps must be a positive, finite number"), "{e}");
}

#[test]
fn the_api_servers_name_needs_a_namespace() {
    let text = "name: t\nservices:\n  Kubernetes: {}\n";
    let t = topology(text);
    let mut o = Options::new(&t);
    let e = manifests(&t, text, &o).unwrap_err().to_string();
    assert!(e.contains("Kubernetes") && e.contains("--namespace"), "{e}");
    o.namespace = Some("lab".into());
    assert!(manifests(&t, text, &o).is_ok());
}

#[test]
fn an_outside_entry_is_loaded_by_its_url() {
    let text = "name: t\nservices:\n  Ext: { url: \"http://127.0.0.1:9/\" }\n";
    let t = topology(text);
    let docs = manifests(&t, text, &Options::new(&t)).unwrap();
    assert_eq!(
        docs.len(),
        4,
        "the ConfigMap, the Secret, the NetworkPolicy and the Job"
    );
    assert!(!container_args(&docs[3]).contains(&"--peer"));
    assert_eq!(loopback_notes(&t).len(), 1);
}
