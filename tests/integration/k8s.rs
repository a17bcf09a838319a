//! `chaoslab k8s`: the manifests of every topology in `topologies/` and
//! of one with awkward bytes, checked offline against the Kubernetes
//! 1.32 OpenAPI schemas by `kubernetes-validate --strict` (stdout, and
//! `--out` through `kubectl kustomize`), wired as the topology says, and
//! carrying the topology file byte for byte as three YAML readers see it
//! (serde_yaml, kubectl's Go reader, PyYAML). No cluster is needed.
//!
//! `scripts/test` installs kubernetes-validate into `target/k8s-venv` and
//! names it in `CHAOSLAB_KUBERNETES_VALIDATE`; without it these tests
//! fail and say so.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use chaoslab::topology::Topology;
use serde_json::Value;
use tokio::time::Instant;

use crate::common;

const KUBERNETES: &str = "1.32.0";

/// kubernetes-validate: `$CHAOSLAB_KUBERNETES_VALIDATE`, else where
/// `scripts/test` puts it.
fn validator() -> PathBuf {
    let path = std::env::var_os("CHAOSLAB_KUBERNETES_VALIDATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::root().join("target/k8s-venv/bin/kubernetes-validate"));
    assert!(
        path.is_file(),
        "kubernetes-validate not found at {}: run scripts/test, which installs it \
         (python3 -m venv target/k8s-venv && target/k8s-venv/bin/pip install kubernetes-validate), \
         or point CHAOSLAB_KUBERNETES_VALIDATE at it",
        path.display()
    );
    path
}

/// Validates `files` with `--strict` against Kubernetes 1.32; returns how
/// many objects passed (each must).
fn validate(files: &[PathBuf], objects: usize) -> usize {
    let out = Command::new(validator())
        .args(["--strict", "-k", KUBERNETES])
        .args(files)
        .output()
        .expect("run kubernetes-validate");
    let (stdout, stderr) = common::text(&out);
    assert!(
        out.status.success() && !stdout.contains("ERROR") && !stderr.contains("ERROR"),
        "kubernetes-validate refused the manifests:\n{stdout}\n{stderr}"
    );
    let passed = stdout
        .lines()
        .filter(|l| l.contains(" passed for resource "))
        .count();
    assert_eq!(
        passed, objects,
        "every object validated:\n{stdout}\n{stderr}"
    );
    passed
}

/// `kubectl kustomize DIR`, as text.
fn kustomize(dir: &Path) -> String {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "kubectl not runnable ({e}): scripts/test installs it (Debian's kubernetes-client)"
            )
        });
    let (stdout, stderr) = common::text(&out);
    assert!(out.status.success(), "kubectl kustomize {dir:?}: {stderr}");
    stdout
}

/// A directory in the temp directory, removed when dropped.
struct TempDir(PathBuf);

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl TempDir {
    fn new(label: &str) -> TempDir {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("chaoslab-k8s-{}-{n}-{label}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every document of a YAML stream (empty ones left out).
fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(yaml)
        .map(|d| serde::Deserialize::deserialize(d).expect("manifests parse as YAML"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

/// The object of `kind` annotated with service `name`.
fn for_service<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    of_kind(docs, kind)
        .into_iter()
        .find(|d| d["metadata"]["annotations"]["chaoslab.dev/service-name"] == name)
        .unwrap_or_else(|| panic!("no {kind} for service {name:?}"))
}

fn args(workload: &Value) -> Vec<String> {
    let c = &workload["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["command"], serde_json::json!(["chaoslab"]));
    c["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_string())
        .collect()
}

/// The `--peer` values of a container's arguments.
fn peers(args: &[String]) -> Vec<&str> {
    args.windows(2)
        .filter(|w| w[0] == "--peer")
        .map(|w| w[1].as_str())
        .collect()
}

/// The topology file a ConfigMap holds: `data` as text, or `binaryData`
/// in base64.
fn config_map_bytes(cm: &Value) -> Vec<u8> {
    if let Some(text) = cm["data"]["topology.yaml"].as_str() {
        assert!(cm.get("binaryData").is_none(), "one key, not two");
        return text.as_bytes().to_vec();
    }
    let coded = cm["binaryData"]["topology.yaml"]
        .as_str()
        .expect("data or binaryData");
    let value = |c: u8| -> u32 {
        let abc = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        abc.iter().position(|&a| a == c).expect("base64") as u32
    };
    let mut out = Vec::new();
    for quad in coded.as_bytes().chunks(4) {
        let n = quad
            .iter()
            .map(|&c| if c == b'=' { 0 } else { value(c) })
            .fold(0u32, |n, v| n << 6 | v);
        let len = 3 - quad.iter().filter(|&&c| c == b'=').count();
        out.extend_from_slice(&n.to_be_bytes()[1..1 + len]);
    }
    out
}

/// Checks the manifests `docs` against topology `path` read as `bytes`:
/// a Deployment and a Service per started service, every dependency a
/// peer at its Service's name, the ConfigMap holding the file.
fn check_wiring(path: &Path, bytes: &[u8], docs: &[Value]) {
    let t = Topology::load(path).expect("topology loads");
    let cm = of_kind(docs, "ConfigMap");
    assert_eq!(cm.len(), 1, "{path:?}: one ConfigMap");
    assert!(
        config_map_bytes(cm[0]) == bytes,
        "{path:?}: ConfigMap bytes differ"
    );
    let cm_name = &cm[0]["metadata"]["name"];
    let mut host: HashMap<&str, &str> = HashMap::new();
    // A pod per service: a service with endpoints is its first node.
    let pods = || {
        t.services
            .iter()
            .enumerate()
            .filter(|&(id, s)| s.url.is_none() && s.group == id)
    };
    for (_, s) in pods() {
        let svc = for_service(docs, "Service", s.service_name());
        let name = svc["metadata"]["name"].as_str().expect("name");
        host.insert(s.service_name(), name);
        let dep = for_service(docs, "Deployment", s.service_name());
        assert_eq!(dep["metadata"]["name"], name, "{path:?}");
        let selector = svc["spec"]["selector"].as_object().expect("selector");
        let pod_labels = &dep["spec"]["template"]["metadata"]["labels"];
        assert!(
            selector.iter().all(|(k, v)| &pod_labels[k] == v),
            "{path:?} {name}"
        );
        assert_eq!(
            dep["spec"]["selector"]["matchLabels"],
            svc["spec"]["selector"]
        );
        let volume = &dep["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"];
        assert_eq!(volume, cm_name, "{path:?} {name}");
        let ann = &dep["spec"]["template"]["metadata"]["annotations"];
        assert_eq!(ann["prometheus.io/scrape"], "true");
        assert_eq!(ann["prometheus.io/port"], "9090");
    }
    assert_eq!(of_kind(docs, "Deployment").len(), host.len(), "{path:?}");
    assert_eq!(of_kind(docs, "Service").len(), host.len(), "{path:?}");
    for (id, s) in pods() {
        let a = args(for_service(docs, "Deployment", s.service_name()));
        assert_eq!(a[..2], ["node", "/etc/chaoslab/topology.yaml"], "{a:?}");
        assert!(
            a.windows(2).any(|w| w == ["--service", s.service_name()]),
            "{a:?}"
        );
        // Every service any of its endpoints calls, by its name.
        let mut want: Vec<String> = t
            .group(id)
            .flat_map(|j| t.services[j].calls.iter())
            .map(|&e| &t.services[t.edges[e].to])
            .filter(|d| d.url.is_none() && d.group != id)
            .map(|d| {
                let n = d.service_name();
                format!("{n}=http://{}:8080/", host[n])
            })
            .collect();
        want.dedup();
        let mut got: Vec<&str> = peers(&a);
        got.sort_unstable();
        want.sort_unstable();
        want.dedup();
        assert_eq!(got, want, "{path:?}: peers of {}", s.name);
    }
    // The control API asks for the token of a Secret every node mounts,
    // and only the lab's driver and Prometheus reach its other ports.
    let secret = of_kind(docs, "Secret");
    assert_eq!(secret.len(), 1, "{path:?}: one Secret");
    let token = secret[0]["stringData"]["token"].as_str().expect("a token");
    assert!(token.len() >= 16, "{token}");
    let secret_name = &secret[0]["metadata"]["name"];
    for (_, s) in pods() {
        let dep = for_service(docs, "Deployment", s.service_name());
        let pod = &dep["spec"]["template"]["spec"];
        let vols = pod["volumes"].as_array().unwrap();
        assert!(
            vols.iter()
                .any(|v| &v["secret"]["secretName"] == secret_name),
            "{path:?} {}",
            s.name
        );
        let a = args(dep);
        assert!(
            a.windows(2)
                .any(|w| w == ["--control-token-file", "/etc/chaoslab-token/token"]),
            "{a:?}"
        );
        assert!(a.iter().any(|x| x == "--control-host"), "{a:?}");
    }
    let np = of_kind(docs, "NetworkPolicy");
    assert_eq!(np.len(), 1, "{path:?}: one NetworkPolicy");
    let rules = np[0]["spec"]["ingress"].as_array().unwrap();
    let rule = |port: &str| {
        rules
            .iter()
            .find(|r| r["ports"][0]["port"] == port)
            .unwrap_or_else(|| panic!("{path:?}: no rule for {port}"))
    };
    assert_eq!(
        rule("control")["from"][0]["podSelector"]["matchLabels"]["chaoslab.dev/role"],
        "driver"
    );
    assert_eq!(
        rule("metrics")["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"],
        "prometheus"
    );
    let job = of_kind(docs, "Job");
    assert_eq!(job.len(), 1, "{path:?}: one Job");
    assert_eq!(
        job[0]["spec"]["template"]["metadata"]["labels"]["chaoslab.dev/role"],
        "driver"
    );
    let a = args(job[0]);
    assert_eq!(a[..2], ["load", "/etc/chaoslab/topology.yaml"], "{a:?}");
    // Every root's service, once, where the load job finds it.
    let mut want: Vec<String> = vec![];
    for r in &t.load.roots {
        let s = &t.services[r.entry];
        let w = format!(
            "{}=http://{}:8080/",
            s.service_name(),
            host.get(s.service_name()).copied().unwrap_or("?")
        );
        if s.url.is_none() && !want.contains(&w) {
            want.push(w);
        }
    }
    assert_eq!(peers(&a), want, "{path:?}");
}

/// Runs `chaoslab k8s` on `path` to stdout and in `--out` mode; validates
/// both, checks the wiring and the bytes of each; returns the objects
/// validated.
fn generate_and_check(path: &Path, scratch: &Path) -> usize {
    let bytes = std::fs::read(path).expect("read topology");
    let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
    let p = path.to_str().expect("utf-8 path");

    let out = common::chaoslab(&["k8s", p]);
    let (stdout, stderr) = common::text(&out);
    assert_eq!(out.status.code(), Some(0), "{p}: {stderr}");
    let docs = documents(&stdout);
    check_wiring(path, &bytes, &docs);
    let file = scratch.join(format!("{stem}.manifests.yaml"));
    std::fs::write(&file, &stdout).unwrap();

    let dir = scratch.join(format!("{stem}-out"));
    let d = dir.to_str().unwrap();
    let out = common::chaoslab(&["k8s", p, "--out", d, "--namespace", "lab", "--replicas"]);
    assert_eq!(out.status.code(), Some(2), "--replicas needs a value");
    let first = Topology::load(path).unwrap();
    let started = first.services.iter().find(|s| s.url.is_none()).unwrap();
    let replicas = format!("{}=2", started.service_name());
    let out = common::chaoslab(&[
        "k8s",
        p,
        "--out",
        d,
        "--namespace",
        "lab",
        "--replicas",
        &replicas,
    ]);
    let (_, stderr) = common::text(&out);
    assert_eq!(out.status.code(), Some(0), "{p} --out: {stderr}");
    let built = kustomize(&dir);
    let kdocs = documents(&built);
    check_wiring(path, &bytes, &kdocs);
    assert!(kdocs
        .iter()
        .all(|d| d["kind"] == "Namespace" || d["metadata"]["namespace"] == "lab"));
    assert_eq!(
        for_service(&kdocs, "Deployment", started.service_name())["spec"]["replicas"],
        2
    );
    assert_eq!(kdocs.len(), docs.len() + 1, "{p}: the Namespace besides");
    let kfile = scratch.join(format!("{stem}-kustomized.yaml"));
    std::fs::write(&kfile, &built).unwrap();

    validate(&[file, kfile], docs.len() + kdocs.len())
}

#[test]
fn every_topology_validates_against_kubernetes_1_32() {
    let _ = validator();
    let scratch = TempDir::new("all");
    let mut files: Vec<PathBuf> = std::fs::read_dir(common::root().join("topologies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "{files:?}");
    let mut objects = 0;
    for f in &files {
        // A mesh of thousands writes thousands of Deployments the same
        // code writes for seven (11 MB for uber-incident.yaml), too many
        // for the validator in a test's time: it gets one per service.
        let services = chaoslab::topology::Topology::load(f)
            .unwrap()
            .services
            .len();
        if services > 200 {
            let out = common::chaoslab(&["k8s", f.to_str().unwrap()]);
            let (yaml, stderr) = common::text(&out);
            assert!(out.status.success(), "{f:?}: {stderr}");
            let deployments = yaml.matches("\nkind: Deployment\n").count();
            let t = chaoslab::topology::Topology::load(f).unwrap();
            let names = t
                .services
                .iter()
                .enumerate()
                .filter(|(i, s)| s.group == *i)
                .count();
            assert_eq!(deployments, names, "{f:?}");
            continue;
        }
        objects += generate_and_check(f, &scratch.0);
    }
    eprintln!(
        "kubernetes-validate --strict -k {KUBERNETES}: {objects} objects from {} topologies passed",
        files.len()
    );
}

/// Tabs, trailing spaces, a CRLF line, U+2028, a byte-order mark, UTF-8
/// in four widths, no final newline; service names with spaces and
/// underscores; an outside service.
const AWKWARD: &str = "name: Awkward Lab\t \ndescription: \"caf\u{e9} \\t tab, \u{2028} sep, \u{feff} bom, bell \\a\"   \n# \u{fc}n\u{ef}c\u{f6}d\u{e9} \u{65e5}\u{672c} \u{1f980} trailing spaces   \r\nservices:\n  Front Door: { calls: [api_v2, Ext] }\t\n  api_v2:\t{ work: 1ms }  \n  Ext: { url: \"http://ext.example:8000/\" }\n# no final newline \t";

#[test]
fn awkward_bytes_survive_every_reader() {
    awkward(AWKWARD, "data");
    // U+0085, which kubectl kustomize reads as a space, goes in base64.
    awkward(&AWKWARD.replace("sep,", "sep, \u{85} nel,"), "binaryData");
}

/// Checks `text` as a topology: validated, wired, its bytes read back by
/// serde_yaml, kubectl kustomize and PyYAML; the ConfigMap holds it under
/// `key`.
fn awkward(text: &str, key: &str) {
    let scratch = TempDir::new("awkward");
    let path = scratch.0.join("awkward.yaml");
    std::fs::write(&path, text).unwrap();
    generate_and_check(&path, &scratch.0);

    let out = common::chaoslab(&["k8s", path.to_str().unwrap()]);
    let docs = documents(&common::text(&out).0);
    assert!(of_kind(&docs, "ConfigMap")[0][key]["topology.yaml"].is_string());
    let front = args(for_service(&docs, "Deployment", "Front Door"));
    assert_eq!(peers(&front), ["api_v2=http://api-v2:8080/"]);
    assert_eq!(
        for_service(&docs, "Service", "api_v2")["metadata"]["name"],
        "api-v2"
    );
    assert!(
        of_kind(&docs, "Deployment").len() == 2,
        "Ext is not started"
    );

    // PyYAML (kubernetes-validate's reader) reads the same bytes back.
    let manifests = scratch.0.join("awkward.yaml.out");
    std::fs::write(&manifests, &out.stdout).unwrap();
    let python = validator().with_file_name("python");
    let read = Command::new(&python)
        .args([
            "-c",
            "import base64, sys, yaml\n\
             docs = [d for d in yaml.safe_load_all(open(sys.argv[1], encoding='utf-8', newline='')) if d]\n\
             cm = [d for d in docs if d['kind'] == 'ConfigMap'][0]\n\
             data = cm.get('data', {}).get('topology.yaml')\n\
             raw = data.encode('utf-8') if data is not None else base64.b64decode(cm['binaryData']['topology.yaml'])\n\
             sys.stdout.buffer.write(raw)",
        ])
        .arg(&manifests)
        .output()
        .unwrap_or_else(|e| panic!("{python:?}: {e}: scripts/test makes this venv"));
    assert!(read.status.success(), "{}", common::text(&read).1);
    assert!(read.stdout == text.as_bytes(), "PyYAML read other bytes");
}

/// Runs `chaoslab ARGS`; asserts exit 2 at once (within 5 s: no wait on a
/// cluster, a network or a timeout; a start on a loaded machine has taken
/// just over a second), no panic, and every needle on stderr.
fn refuses(args: &[&str], needles: &[&str]) {
    let started = Instant::now();
    let out = common::chaoslab(args);
    let took = started.elapsed();
    let (stdout, stderr) = common::text(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}\n{stdout}\n{stderr}");
    assert!(took.as_secs_f64() < 5.0, "{args:?} took {took:?}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(stdout.is_empty(), "{args:?} wrote manifests: {stdout}");
    for n in needles {
        assert!(
            stderr.contains(n),
            "{args:?}: stderr should contain `{n}`:\n{stderr}"
        );
    }
}

#[test]
fn bad_input_exits_2_at_once() {
    let scratch = TempDir::new("bad");
    let clash = scratch.0.join("clash.yaml");
    std::fs::write(
        &clash,
        "name: t\nservices:\n  Cart API: { calls: [cart_api] }\n  cart_api: {}\n",
    )
    .unwrap();
    let c = clash.to_str().unwrap();
    refuses(&["k8s", c], &["\"Cart API\"", "\"cart_api\"", "`cart-api`"]);
    let chain = "topologies/uber-chain.yaml";
    refuses(
        &["k8s", chain, "--replicas", "Z=2"],
        &["no service `Z`", "A, B, C"],
    );
    refuses(
        &["k8s", chain, "--replicas", "B=lots"],
        &["`lots` is not a whole number"],
    );
    refuses(&["k8s", chain, "--replicas", "B"], &["--replicas B"]);
    refuses(
        &["k8s", chain, "--namespace", "My_Lab"],
        &["--namespace \"My_Lab\""],
    );
    refuses(
        &["k8s", chain, "--image", "Chaos Lab:dev"],
        &["--image \"Chaos Lab:dev\""],
    );
    refuses(&["k8s", chain, "--rps", "-5"], &["--rps"]);
    refuses(&["k8s", chain, "--duration", "0s"], &["0s"]);
    refuses(&["k8s", "topologies/no-such.yaml"], &["no-such.yaml"]);
    let not_a_dir = scratch.0.join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    refuses(
        &["k8s", chain, "--out", not_a_dir.to_str().unwrap()],
        &["writing the manifests"],
    );
    let outside = scratch.0.join("outside.yaml");
    std::fs::write(
        &outside,
        "name: t\nservices:\n  A: { calls: [X] }\n  X: { url: \"http://x.example/\" }\n",
    )
    .unwrap();
    refuses(
        &["k8s", outside.to_str().unwrap(), "--replicas", "X=2"],
        &["outside service"],
    );
}

/// `k8s --shards 25` of the 2,500-service incident mesh (SPEC section
/// 19): 25 Deployments, one a shard, each running `chaoslab node --shard
/// K/25` behind a headless Service (a shard listens on a port per
/// service, past the hundred ports an EndpointSlice holds); the network
/// policy lets the lab's pods reach every such port; the load Job calls
/// each root at its shard's address and the port its shard binds for it;
/// and `kubernetes-validate --strict` passes every object.
#[test]
fn a_mesh_of_thousands_over_25_shards_is_25_deployments_that_validate() {
    let _ = validator();
    let scratch = TempDir::new("shards");
    let path = common::root().join("topologies/uber-incident.yaml");
    let out = common::chaoslab(&["k8s", path.to_str().unwrap(), "--shards", "25"]);
    let (yaml, stderr) = common::text(&out);
    assert!(out.status.success(), "{stderr}");
    let docs = documents(&yaml);
    let deployments = of_kind(&docs, "Deployment");
    assert_eq!(deployments.len(), 25);
    let t = Topology::load(&path).unwrap();
    let placed = chaoslab::topology::shards::place(&t, 25).unwrap();
    let slots = chaoslab::topology::shards::Slots::of(&t, &placed.shard_of, 25);
    for (k, d) in deployments.iter().enumerate() {
        let a = args(d);
        assert!(
            a.windows(2).any(|w| w == ["--shard", &format!("{k}/25")]),
            "{a:?}"
        );
        assert!(
            a.windows(2)
                .any(|w| w[0] == "--peers" && w[1].contains("{shard}")),
            "{a:?}"
        );
    }
    let services = of_kind(&docs, "Service");
    assert_eq!(services.len(), 25);
    assert!(services.iter().all(|s| s["spec"]["clusterIP"] == "None"));
    let range = &of_kind(&docs, "NetworkPolicy")[0]["spec"]["ingress"][0]["ports"][0];
    let most = slots.count.iter().max().copied().unwrap();
    assert_eq!(
        range["endPort"].as_u64(),
        Some(8080 + u64::from(most) - 1),
        "{range}"
    );
    // Each root where its shard binds it.
    let job = args(of_kind(&docs, "Job")[0]);
    let roots = peers(&job);
    assert!(!roots.is_empty());
    for p in roots {
        let (name, url) = p.split_once('=').unwrap();
        let id = t.service_id(name).unwrap();
        let (k, ports) = slots.ports(&t, id).unwrap();
        let want = format!("-shard-{k}:{}/", 8080 + ports.start);
        assert!(url.contains(&want), "{p}: {want}");
    }
    let file = scratch.0.join("shards.yaml");
    std::fs::write(&file, &yaml).unwrap();
    validate(&[file], docs.len());
}
