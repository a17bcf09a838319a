//! How long `chaoslab import` takes on a mesh the size of a real one.
//!
//! A Jaeger dependencies answer of 10,000 links between 2,000 services
//! (every service called by an earlier one, the rest of the links drawn
//! between random earlier and later services, and 5 links back up that
//! close cycles) is imported end to end as `chaoslab import jaeger FILE`
//! does it (read, parse, cut the cycles, write, validate the written
//! topology with `Topology::from_yaml`), and each phase is timed apart.
//! `of it, YAML` is the part of validating that is serde_yaml reading the
//! text into a value, before any of the topology's own checks. Medians of
//! 5 runs, milliseconds; the whole import must stay under 1 s.
//!
//! `cargo bench --bench import_scale`; under `cargo test` one round of
//! 2,000 links between 400 services, checked for its counts.

use chaoslab::import::{self, formats, write, Format, Options};
use chaoslab::topology::Topology;

/// Links closing a cycle.
const CYCLES: usize = 5;

#[path = "common/timing.rs"]
mod timing;
use timing::time;

/// `{"data": [...]}` of `links` links between `services` services.
fn dependencies(services: usize, links: usize, seed: u64) -> String {
    let mut x = seed;
    let mut next = move |n: usize| {
        // splitmix64: enough to spread the links, the same every run.
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    };
    let mut seen = std::collections::HashSet::new();
    let mut pairs: Vec<(usize, usize)> = (1..services).map(|i| (next(i), i)).collect();
    seen.extend(pairs.iter().copied());
    while pairs.len() < links - CYCLES {
        let (a, b) = (next(services), next(services));
        let (a, b) = (a.min(b), a.max(b));
        if a != b && seen.insert((a, b)) {
            pairs.push((a, b));
        }
    }
    // Back up from a later service to an earlier one it is reached from
    // (its caller's caller), never to the root.
    let mut k = 0;
    while pairs.len() < links {
        let (a, b) = pairs[services / 2 + k * 37];
        k += 1;
        if a > 0 && seen.insert((b, a)) {
            pairs.push((b, a));
        }
    }
    let items: Vec<String> = pairs
        .iter()
        .enumerate()
        .map(|(i, (a, b))| {
            format!(
                r#"{{"parent":"svc-{a}","child":"svc-{b}","callCount":{}}}"#,
                100 + (i * 7919) % 900
            )
        })
        .collect();
    format!("{{\"data\":[\n{}\n],\"errors\":null}}\n", items.join(",\n"))
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (runs, services, links) = if bench {
        (5, 2_000, 10_000)
    } else {
        (1, 400, 2_000)
    };
    let text = dependencies(services, links, 42);
    let path =
        std::env::temp_dir().join(format!("chaoslab-import-scale-{}.json", std::process::id()));
    std::fs::write(&path, &text).expect("write the generated file");
    let args = Options {
        format: Format::Jaeger,
        source: path.to_str().expect("a UTF-8 temp path").to_string(),
        output: None,
        name: None,
        rps: None,
        with_faults: false,
        virtual_client: None,
    };

    // The whole import, checked for what it wrote.
    let yaml = import::import(&args).expect("the generated graph imports");
    let t = Topology::from_yaml(&yaml, "imported").expect("it validates");
    let cuts = yaml.matches("# Cycle ").count();
    let services_written = t.services.len();
    assert_eq!(services_written, services, "every service is written");
    // A link back closes many cycles; each found is cut at its weakest
    // link, which need not be the link back, so there are more cuts than
    // links back, and what is left validated as acyclic.
    assert!(cuts >= 1, "the {CYCLES} links back make cycles, each cut");
    assert_eq!(t.edges.len(), links - cuts, "every link but the cut ones");
    assert_eq!(t.load.roots.len(), 1, "svc-0 is the only root");

    let total = time(runs, || import::import(&args).expect("imports"));
    let parse = time(runs, || {
        formats::read(args.format, &text, "user").expect("parses")
    });
    let g = formats::read(args.format, &text, "user").expect("parses");
    let cut = time(runs, || g.clone().cut_cycles());
    let mut cut_g = g.clone();
    let c = cut_g.cut_cycles();
    let w = write::Written {
        name: "scale",
        source: "bench",
        rps: None,
        with_faults: false,
    };
    let written = time(runs, || {
        write::topology(&cut_g, &c, &w).expect("has a root")
    });
    let validate = time(runs, || {
        Topology::from_yaml(&yaml, "imported").expect("validates")
    });
    // Of validating, how much is reading the YAML at all.
    let yaml_only = time(runs, || {
        chaoslab::yaml::from_str::<chaoslab::yaml::Value>(&yaml, "imported").expect("YAML")
    });
    let _ = std::fs::remove_file(&path);

    println!("import scale: medians of {runs} run(s), milliseconds");
    println!(
        "{:>8} {:>8} {:>5} {:>8} {:>8} {:>8} {:>9} {:>12} {:>8}",
        "services", "links", "cuts", "parse", "cut", "write", "validate", "of it, YAML", "import"
    );
    println!(
        "{services:>8} {links:>8} {cuts:>5} {parse:>8.1} {cut:>8.1} {written:>8.1} {validate:>9.1} {yaml_only:>12.1} {total:>8.1}"
    );
    if bench {
        assert!(
            total < 1000.0,
            "importing {links} links took {total:.0} ms, over 1 s"
        );
    }
}
