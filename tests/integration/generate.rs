//! `chaoslab generate` (SPEC section 12): a mesh drawn from published
//! statistics whose fan-out quantiles, read back from the written file,
//! are the published ones; the same seed writes the same file; `check`
//! passes on it; and a small one runs, each service at the load the
//! sampled calls predict.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use chaoslab::topology::Topology;

use crate::common::{chaoslab, fleet_lock, text};
use crate::tables::{each_node_at_the_model, headless_report, num};

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("chaoslab-generate-{}-{name}", std::process::id()))
}

fn generated(args: &[&str], name: &str) -> (Topology, String) {
    let out = scratch(name);
    let mut all = vec!["generate", "-o", out.to_str().unwrap()];
    all.extend_from_slice(args);
    let run = chaoslab(&all);
    let (stdout, stderr) = text(&run);
    assert_eq!(run.status.code(), Some(0), "{all:?}: {stdout}\n{stderr}");
    let yaml = std::fs::read_to_string(&out).unwrap();
    let t = Topology::load(&out).unwrap_or_else(|e| panic!("{e}"));
    (t, yaml)
}

/// The quantile `q` of sorted `v`, nearest rank.
fn quantile(v: &[usize], q: f64) -> usize {
    v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}

/// Each calling service's distinct callee services, over its endpoints.
fn fan_outs(t: &Topology) -> Vec<usize> {
    let mut callees: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for e in &t.edges {
        callees
            .entry(t.group_name(e.from))
            .or_default()
            .insert(t.group_name(e.to));
    }
    let mut f: Vec<usize> = callees.values().map(BTreeSet::len).collect();
    f.sort_unstable();
    f
}

#[test]
fn a_meta_like_mesh_has_the_published_fan_out_and_depth() {
    let args = ["--services", "5000", "--like", "meta", "--seed", "1"];
    let (t, yaml) = generated(&args, "meta.yaml");
    let f = fan_outs(&t);
    let (p50, p90, p99) = (quantile(&f, 0.5), quantile(&f, 0.9), quantile(&f, 0.99));
    eprintln!(
        "meta 5000: fan-out median {p50}, p90 {p90}, p99 {p99}, max {}",
        f[f.len() - 1]
    );
    for (got, want) in [(p50, 4.0), (p90, 13.0), (p99, 100.0)] {
        assert!(
            (got as f64 - want).abs() <= 0.1 * want,
            "fan-out {got}, published {want}"
        );
    }
    let services: BTreeSet<&str> = (0..t.services.len()).map(|i| t.group_name(i)).collect();
    assert_eq!(services.len(), 5000);
    // 13% entries, every one a root; the longest path 19 services (depth
    // 18 below the entry).
    assert_eq!(t.load.roots.len(), 650);
    assert_eq!(t.max_depth(), 18);
    assert!(t.edges.iter().any(|e| e.p < 1.0), "sampled calls");
    assert!(yaml.contains("Huye, Shkuro, Sambasivan"), "the source");
    // The same seed writes the same file; another seed another.
    let (_, again) = generated(&args, "meta-again.yaml");
    assert!(yaml == again, "the same seed wrote another file");
    let (_, other) = generated(
        &["--services", "5000", "--like", "meta", "--seed", "2"],
        "meta-2.yaml",
    );
    assert!(yaml != other);
    let check = chaoslab(&["check", scratch("meta.yaml").to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check).1);
    for f in ["meta.yaml", "meta-again.yaml", "meta-2.yaml"] {
        let _ = std::fs::remove_file(scratch(f));
    }
}

#[test]
fn a_small_alibaba_like_mesh_runs_at_the_load_its_sampled_calls_predict() {
    let (t, yaml) = generated(
        &[
            "--services",
            "60",
            "--like",
            "alibaba",
            "--seed",
            "4",
            "--rps",
            "10",
        ],
        "alibaba.yaml",
    );
    assert!(t.max_depth() <= 5, "Alibaba's depth: up to 6 services");
    assert!(yaml.contains("16.2%"));
    assert!(t.edges.iter().any(|e| e.count > 1), "repeated calls");
    let file = scratch("alibaba.yaml");
    let _fleet = fleet_lock();
    let r = headless_report(
        file.to_str().unwrap(),
        &[
            "--policy",
            "ownership",
            "--duration",
            "6s",
            "--warmup",
            "1s",
        ],
    );
    let nodes = r["nodes"].as_array().unwrap();
    let rps: f64 = nodes.iter().map(|n| num(n, "rps")).sum();
    let baseline: f64 = nodes.iter().map(|n| num(n, "baseline_rps")).sum();
    eprintln!("alibaba 60: {rps:.1} requests/s over the mesh, baseline {baseline:.1}");
    // Each service at its sampled share: three relative spreads of a
    // draw over the requests it measured. (The mesh's total is not held
    // to a bound: one draw of a call above a large subtree moves it by
    // the subtree, so its spread is far wider than a node's.)
    each_node_at_the_model(&r, "alibaba 60");
    assert!(num(&r["root"], "availability") > 0.999);
    let _ = std::fs::remove_file(file);
}

#[test]
fn bad_arguments_exit_2_and_write_nothing() {
    let out = scratch("bad.yaml");
    for args in [
        vec!["--services", "5"],
        vec!["--services", "20001"],
        vec!["--services", "100", "--like", "google"],
        vec!["--services", "many"],
    ] {
        let mut all = vec!["generate", "-o", out.to_str().unwrap()];
        all.extend(args.iter().copied());
        let run = chaoslab(&all);
        assert_eq!(run.status.code(), Some(2), "{all:?}");
        assert!(!out.exists(), "{all:?} wrote a file");
    }
}
