//! `chaoslab k8s`: a topology as Kubernetes manifests (SPEC section 10).
//!
//! When a topology outgrows one process, Kubernetes is the engine and the
//! lab adds no scheduler of its own: each service runs as its own process
//! (`chaoslab node`) in its own Deployment behind its own Service, finding
//! its dependencies by `--peer NAME=http://LABEL:8080/`, where `LABEL` is
//! the dependency's Service name; a Job runs `chaoslab load` against the
//! entry; the topology file travels in a ConfigMap, byte for byte, so
//! every pod reads the very file `chaoslab check` accepted. Pod templates
//! carry the `prometheus.io/*` scrape annotations for each node's metrics
//! endpoint.
//!
//! [`manifests`] is pure (topology and options in, documents out);
//! [`run`] reads the file, checks the flags and writes the documents to
//! stdout or, with `--out DIR`, one file per object (a node's Deployment
//! and Service share one) with a `kustomization.yaml` listing them.
//!
//! ```
//! use chaoslab::k8s::{manifests, Options};
//! use chaoslab::topology::Topology;
//!
//! let text = "name: tiny\nservices:\n  A: { calls: [B] }\n  B: {}\n";
//! let t = Topology::from_yaml(text, "tiny.yaml").unwrap();
//! let docs = manifests(&t, text, &Options::new(&t)).unwrap();
//! let kinds: Vec<_> = docs.iter().map(|d| d.value["kind"].as_str().unwrap()).collect();
//! assert_eq!(
//!     kinds,
//!     ["ConfigMap", "Secret", "NetworkPolicy", "Deployment", "Service", "Deployment", "Service", "Job"]
//! );
//! let args = &docs[3].value["spec"]["template"]["spec"]["containers"][0]["args"];
//! assert!(args.as_array().unwrap().contains(&"B=http://b:8080/".into()));
//! ```

pub mod emit;
pub mod names;
pub mod objects;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::error::{write_output, RunError};
use crate::format::fmt_duration;
use crate::topology::{Topology, TopologyError};
use objects::{Context, HTTP_PORT, TOPOLOGY_FILE};

/// The most pods `--replicas` gives one service.
pub const MAX_REPLICAS: u32 = 1000;
/// The largest topology a ConfigMap holds (1 MiB, less room for the
/// object around it).
pub const MAX_TOPOLOGY_BYTES: usize = 1_000_000;

/// Why the manifests cannot be written: a flag or a name Kubernetes
/// would refuse. Every one is a usage error (exit status 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum K8sError {
    /// `--control-token-file` holds no token.
    #[error("{0}")]
    Token(String),
    /// Two services map to one DNS label.
    #[error("services \"{first}\" and \"{second}\" both become the Kubernetes name `{label}`: rename one of them")]
    NameClash {
        /// The one listed first.
        first: String,
        /// The other.
        second: String,
        /// Their label.
        label: String,
    },
    /// A service would take the API server's own Service name.
    #[error("service \"{service}\" becomes the Kubernetes name `kubernetes`, which the API server's own Service holds in the default namespace: give --namespace (e.g. --namespace chaoslab)")]
    Reserved {
        /// The service.
        service: String,
    },
    /// `--replicas` names no service of the topology.
    #[error("--replicas {spec}: there is no service `{name}` in topology {topology} (services: {services})")]
    UnknownService {
        /// The flag's value.
        spec: String,
        /// The name.
        name: String,
        /// The topology.
        topology: String,
        /// The services started.
        services: String,
    },
    /// `--replicas` names an outside service.
    #[error("--replicas {spec}: `{name}` is an outside service (url:), nothing is started for it")]
    Outside {
        /// The flag's value.
        spec: String,
        /// The name.
        name: String,
    },
    /// `--replicas` without a usable count.
    #[error("--replicas {spec}: {why} (write e.g. --replicas B=3)")]
    BadReplicas {
        /// The flag's value.
        spec: String,
        /// What is wrong.
        why: String,
    },
    /// `--replicas` twice for one service.
    #[error("--replicas: service `{0}` is given twice")]
    TwiceReplicas(String),
    /// `--namespace` is not a DNS label.
    #[error("--namespace {0:?}: a namespace is 1 to 63 lower-case letters, digits and `-`, starting and ending with a letter or digit")]
    BadNamespace(String),
    /// `--image` is not an image reference.
    #[error("--image {image:?}: not an image reference: {why}")]
    BadImage {
        /// The flag's value.
        image: String,
        /// What is wrong.
        why: &'static str,
    },
    /// `--rps` not a positive number.
    #[error("--rps {0}: the rate must be a positive number")]
    BadRps(f64),
    /// `--shards` cannot place the topology.
    #[error("{0}")]
    Shards(String),
    /// The topology is too big for a ConfigMap.
    #[error("{file}: {bytes} bytes is more than a ConfigMap holds ({MAX_TOPOLOGY_BYTES} bytes)")]
    TooBig {
        /// The file.
        file: String,
        /// Its size.
        bytes: usize,
    },
}

/// What `chaoslab k8s` is asked for: the topology file, where to write,
/// and the flags [`Options::from_request`] reads against the topology.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The topology file.
    pub topology: PathBuf,
    /// A directory for one file per object and a kustomization.yaml;
    /// `None` writes one multi-document YAML on stdout.
    pub out: Option<PathBuf>,
    /// Every object's namespace; `None` leaves it to kubectl.
    pub namespace: Option<String>,
    /// The container image every pod runs.
    pub image: String,
    /// Pods of one service, `NAME=N` each.
    pub replicas: Vec<String>,
    /// The load Job's root requests per second; `None` is `load.rps`.
    pub rps: Option<f64>,
    /// How long the load Job drives the entry.
    pub duration: Duration,
    /// A file with the token for the Secret; `None` draws a fresh one.
    pub control_token_file: Option<PathBuf>,
    /// One Deployment per shard of this many instead of one per service.
    pub shards: Option<usize>,
}

/// What the manifests are made with, besides the topology.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Every object's namespace; `None` leaves it to kubectl.
    pub namespace: Option<String>,
    /// The image every pod runs.
    pub image: String,
    /// Pods per service, in topology order (outside services' ignored).
    pub replicas: Vec<u32>,
    /// The load Job's root requests per second.
    pub rps: f64,
    /// How long the load Job runs.
    pub duration: Duration,
    /// The control API's token, for the Secret every node mounts.
    pub control_token: String,
    /// One Deployment per shard of this many (SPEC section 19).
    pub shards: Option<usize>,
}

impl Options {
    /// The defaults for `t`: no namespace, image `chaoslab:dev`, one pod
    /// each, `load.rps`, 60 s.
    pub fn new(t: &Topology) -> Options {
        Options {
            namespace: None,
            image: "chaoslab:dev".into(),
            replicas: t.services.iter().map(|s| s.replicas.max(1)).collect(),
            rps: t.load.rps,
            duration: Duration::from_secs(60),
            control_token: fresh_token(),
            shards: None,
        }
    }

    /// The options a `chaoslab k8s` request asks for, checked against
    /// `t`.
    pub fn from_request(args: &Request, t: &Topology) -> Result<Options, K8sError> {
        let mut o = Options::new(t);
        if let Some(ns) = &args.namespace {
            names::check_namespace(ns)?;
            o.namespace = Some(ns.clone());
        }
        names::check_image(&args.image)?;
        o.image = args.image.clone();
        if let Some(path) = &args.control_token_file {
            let why = |e: String| {
                K8sError::Token(format!("--control-token-file {}: {e}", path.display()))
            };
            let text =
                std::fs::read_to_string(path).map_err(|e| why(format!("cannot read it: {e}")))?;
            o.control_token = crate::session::Token::new(&text)
                .map_err(why)?
                .secret()
                .to_string();
        }
        let mut given = vec![false; t.services.len()];
        for spec in &args.replicas {
            let (id, n) = parse_replicas(t, spec)?;
            if std::mem::replace(&mut given[id], true) {
                return Err(K8sError::TwiceReplicas(t.services[id].name.clone()));
            }
            o.replicas[id] = n;
        }
        if let Some(r) = args.rps {
            if !r.is_finite() || r <= 0.0 {
                return Err(K8sError::BadRps(r));
            }
            o.rps = r;
        }
        o.duration = args.duration;
        if let Some(n) = args.shards {
            crate::topology::shards::place(t, n).map_err(|e| K8sError::Shards(e.0))?;
            o.shards = Some(n);
        }
        Ok(o)
    }
}

/// `NAME=N` against the topology: the service and its pods.
fn parse_replicas(t: &Topology, spec: &str) -> Result<(usize, u32), K8sError> {
    let bad = |why: String| K8sError::BadReplicas {
        spec: spec.to_string(),
        why,
    };
    let (name, n) = spec
        .rsplit_once('=')
        .ok_or_else(|| bad("no `=N` after the service".into()))?;
    let n: u32 = n
        .trim()
        .parse()
        .map_err(|_| bad(format!("`{n}` is not a whole number of pods")))?;
    if n > MAX_REPLICAS {
        return Err(bad(format!("{n} pods is more than {MAX_REPLICAS}")));
    }
    let id = t.service_id(name).ok_or_else(|| K8sError::UnknownService {
        spec: spec.to_string(),
        name: name.to_string(),
        topology: t.name.clone(),
        services: t
            .services
            .iter()
            .filter(|s| s.url.is_none())
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    })?;
    if t.services[id].url.is_some() {
        return Err(K8sError::Outside {
            spec: spec.to_string(),
            name: name.to_string(),
        });
    }
    Ok((id, n))
}

/// One object and the file it goes to under `--out`.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The file name in the output directory.
    pub file: String,
    /// The object.
    pub value: Value,
}

/// The objects for topology `t` read from `text`: the Namespace (with
/// `--namespace`), the ConfigMap, each started service's Deployment and
/// Service, the load Job.
pub fn manifests(t: &Topology, text: &str, o: &Options) -> Result<Vec<Manifest>, K8sError> {
    let labels = names::service_labels(t)?;
    if matches!(o.namespace.as_deref(), None | Some("default")) {
        if let Some(i) = labels
            .iter()
            .position(|l| l.as_deref() == Some("kubernetes"))
        {
            return Err(K8sError::Reserved {
                service: t.services[i].name.clone(),
            });
        }
    }
    let topology = names::dns_label(&t.name);
    // Object names are the label and a suffix, 63 characters in all.
    let prefix = names::cut(&topology, names::MAX_LABEL - "-topology".len()).to_string();
    let ctx = Context {
        secret: format!("{prefix}-control-token"),
        config_map: format!("{prefix}-topology"),
        topology,
        topology_name: t.name.clone(),
        namespace: o.namespace.clone(),
        image: o.image.clone(),
    };
    // A peer by its service's name: a node serving a service with
    // endpoints calls each at its path under that URL.
    let url = |id: usize| {
        labels[id]
            .as_ref()
            .map(|l| format!("{}=http://{l}:{HTTP_PORT}/", t.services[id].service_name()))
    };
    let mut out = Vec::new();
    let mut push = |file: &str, value: Value| {
        out.push(Manifest {
            file: file.to_string(),
            value,
        })
    };
    if let Some(ns) = &o.namespace {
        push("namespace.yaml", objects::namespace(&ctx, ns));
    }
    push("configmap.yaml", objects::config_map(&ctx, text));
    push("secret.yaml", objects::secret(&ctx, &o.control_token));
    if let Some(n) = o.shards {
        let shards = sharded(t, &ctx, &prefix, n, o)?;
        push(
            "network-policy.yaml",
            objects::network_policy(&ctx, shards.ports),
        );
        for (file, value) in shards.objects {
            push(&file, value);
        }
        push("load-job.yaml", shards.load);
        return Ok(out);
    }
    push("network-policy.yaml", objects::network_policy(&ctx, 1));
    for (id, s) in t.services.iter().enumerate() {
        let Some(label) = &labels[id] else { continue };
        // A pod per service: a service's endpoints are its first node's.
        if s.group != id {
            continue;
        }
        let name = s.service_name();
        let mut args: Vec<String> = ["node", TOPOLOGY_FILE, "--service", name]
            .map(String::from)
            .into();
        args.extend(["--listen".into(), format!("0.0.0.0:{HTTP_PORT}")]);
        // Every service any of its endpoints calls, once, by its name.
        for peer in t.services_called_by(id).into_iter().filter_map(url) {
            args.extend(["--peer".into(), peer]);
        }
        args.extend(endpoint_args(label, o.namespace.as_deref()));
        let file = format!("node-{label}.yaml");
        let deployment = objects::deployment(&ctx, name, label, o.replicas[id], args);
        push(&file, deployment);
        push(&file, objects::service(&ctx, name, label));
    }
    let mut args: Vec<String> = vec!["load".into(), TOPOLOGY_FILE.into()];
    // Every root's service, once.
    let mut roots: Vec<usize> = t
        .load
        .roots
        .iter()
        .map(|r| t.services[r.entry].group)
        .collect();
    roots.dedup();
    let mut seen = vec![false; t.services.len()];
    roots.retain(|&r| !std::mem::replace(&mut seen[r], true));
    for entry in roots.into_iter().filter_map(url) {
        args.extend(["--peer".into(), entry]);
    }
    args.extend([
        "--rps".into(),
        format!("{}", o.rps),
        "--duration".into(),
        fmt_duration(o.duration),
    ]);
    push(
        "load-job.yaml",
        objects::job(&ctx, &format!("{prefix}-load"), args),
    );
    Ok(out)
}

/// A node's or a shard's metrics and control endpoints, with the token
/// file and the names a driver calls its control API by (its Service's,
/// and with `--namespace` the longer forms).
fn endpoint_args(label: &str, namespace: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "--metrics".into(),
        format!("0.0.0.0:{}", objects::METRICS_PORT),
        "--control".into(),
        format!("0.0.0.0:{}", objects::CONTROL_PORT),
        "--control-token-file".into(),
        objects::TOKEN_FILE.into(),
    ];
    let mut hosts = vec![label.to_string()];
    if let Some(ns) = namespace {
        hosts.extend([
            format!("{label}.{ns}"),
            format!("{label}.{ns}.svc"),
            format!("{label}.{ns}.svc.cluster.local"),
        ]);
    }
    for h in hosts {
        args.extend(["--control-host".into(), h]);
    }
    args
}

/// The objects of a mesh spread over shards, and the most service ports
/// a shard's pod listens on.
struct Sharded {
    objects: Vec<(String, Value)>,
    load: Value,
    ports: u32,
}

/// One Deployment per shard (its pod runs `chaoslab node --shard K/N`,
/// its services on consecutive ports from 8080), each behind a headless
/// Service: a pod's name resolves to its address, and a shard listens on
/// as many ports as it has services' replicas, past the hundred ports an
/// EndpointSlice holds. The load Job calls each root where its shard
/// listens for it.
fn sharded(
    t: &Topology,
    ctx: &Context,
    prefix: &str,
    n: usize,
    o: &Options,
) -> Result<Sharded, K8sError> {
    let p = crate::topology::shards::place(t, n).map_err(|e| K8sError::Shards(e.0))?;
    let slots = crate::topology::shards::Slots::of(t, &p.shard_of, n);
    let prefix = names::cut(prefix, names::MAX_LABEL - "-shard-1023".len());
    let label = |k: usize| format!("{prefix}-shard-{k}");
    let template = format!("http://{prefix}-shard-{{shard}}:{HTTP_PORT}/");
    let bases: Vec<Option<String>> = (0..n)
        .map(|k| Some(template.replace("{shard}", &k.to_string())))
        .collect();
    let mut objects = vec![];
    for k in 0..n {
        let label = label(k);
        let name = format!("shard {k}/{n}");
        let mut args: Vec<String> = vec![
            "node".into(),
            TOPOLOGY_FILE.into(),
            "--shard".into(),
            format!("{k}/{n}"),
            "--listen".into(),
            format!("0.0.0.0:{HTTP_PORT}"),
            "--peers".into(),
            template.clone(),
        ];
        args.extend(endpoint_args(&label, o.namespace.as_deref()));
        let file = format!("shard-{k}.yaml");
        objects.push((
            file.clone(),
            objects::shard_deployment(ctx, &name, &label, slots.count[k], args),
        ));
        objects.push((file, objects::headless_service(ctx, &name, &label)));
    }
    let urls = crate::session::shards::peers(t, &slots, &bases);
    let mut args: Vec<String> = vec!["load".into(), TOPOLOGY_FILE.into()];
    let mut seen = vec![false; t.services.len()];
    for r in &t.load.roots {
        let g = t.services[r.entry].group;
        if std::mem::replace(&mut seen[g], true) {
            continue;
        }
        if let Some(u) = &urls[g] {
            args.extend([
                "--peer".into(),
                format!("{}={u}", t.services[g].service_name()),
            ]);
        }
    }
    args.extend([
        "--rps".into(),
        format!("{}", o.rps),
        "--duration".into(),
        fmt_duration(o.duration),
    ]);
    Ok(Sharded {
        objects,
        load: objects::job(ctx, &format!("{prefix}-load"), args),
        ports: slots.count.iter().copied().max().unwrap_or(1).max(1),
    })
}

/// A token of 32 random characters (24 bytes from the operating
/// system's generator, in base64), for the Secret when none is given.
pub fn fresh_token() -> String {
    use rand::RngExt;
    let bytes: [u8; 24] = rand::rng().random();
    objects::base64(&bytes)
}

/// The `kustomization.yaml` listing `files`.
pub fn kustomization(files: &[&str]) -> Value {
    json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": files,
    })
}

/// Outside services whose `url:` points at loopback: inside a pod that is
/// the pod itself.
fn loopback_notes(t: &Topology) -> Vec<String> {
    t.services
        .iter()
        .filter_map(|s| Some((s, s.url.as_deref()?)))
        .filter(|(_, u)| {
            let host = u.trim_start_matches("http://");
            host.starts_with("127.") || host.starts_with("localhost") || host.starts_with("[::1]")
        })
        .map(|(s, u)| {
            format!(
                "note: outside service \"{}\" is at {u}, a loopback address: inside a pod that is the pod itself; point its url: at an address the pods can reach",
                s.name
            )
        })
        .collect()
}

/// `chaoslab k8s`.
pub fn run(args: Request) -> Result<(), RunError> {
    let file = args.topology.display().to_string();
    let text = std::fs::read_to_string(&args.topology).map_err(|source| TopologyError::Read {
        file: file.clone(),
        source,
    })?;
    let t = Topology::from_yaml(&text, &file)?;
    if text.len() > MAX_TOPOLOGY_BYTES {
        return Err(RunError::usage(K8sError::TooBig {
            file,
            bytes: text.len(),
        }));
    }
    let options = Options::from_request(&args, &t).map_err(RunError::usage)?;
    let docs = manifests(&t, &text, &options).map_err(RunError::usage)?;
    if objects::needs_binary(&text) {
        eprintln!("chaoslab: note: {file} holds U+0085 (NEL), which kubectl kustomize reads as a space: the ConfigMap carries the file base64-encoded under binaryData");
    }
    for note in loopback_notes(&t) {
        eprintln!("chaoslab: {note}");
    }
    match &args.out {
        None => crate::error::write_or_print(
            None,
            &emit::stream(docs.iter().map(|d| &d.value)),
            "manifests",
        ),
        Some(dir) => write_dir(dir, &docs),
    }
}

/// One file per object (a node's two in one), then the kustomization.
fn write_dir(dir: &Path, docs: &[Manifest]) -> Result<(), RunError> {
    std::fs::create_dir_all(dir).map_err(|source| RunError::Output {
        what: "manifests",
        path: dir.to_path_buf(),
        source,
    })?;
    // A file's objects are next to each other.
    let mut files: Vec<&str> = Vec::new();
    let mut start = 0;
    for i in 1..=docs.len() {
        if i == docs.len() || docs[i].file != docs[start].file {
            let text = emit::stream(docs[start..i].iter().map(|d| &d.value));
            write_output(&dir.join(&docs[start].file), &text, "manifests")?;
            files.push(&docs[start].file);
            start = i;
        }
    }
    let k = emit::document(&kustomization(&files));
    write_output(&dir.join("kustomization.yaml"), &k, "kustomization")?;
    eprintln!(
        "chaoslab: wrote {} files and kustomization.yaml to {} (kubectl apply -k {})",
        files.len(),
        dir.display(),
        dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests;
