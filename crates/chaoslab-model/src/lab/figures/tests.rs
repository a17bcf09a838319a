use super::*;
use crate::metrics::{Counts, RadiusStats, ServiceCounts};
use crate::topology::Topology;

#[test]
fn names_and_paths_are_unique_and_every_figure_has_help() {
    let mut names = std::collections::HashSet::new();
    let mut paths = std::collections::HashSet::new();
    for f in Figure::ALL {
        assert!(names.insert(f.name()), "{} twice", f.name());
        assert!(paths.insert((f.scope(), f.path())), "{} twice", f.path());
        assert!(f.help().ends_with('.'), "{}: {:?}", f.name(), f.help());
        assert_eq!(Figure::parse(f.name()), Some(*f));
    }
}

/// Timeouts where nothing is slow or failing are the machine's: they
/// mark the window saturated; beside a latency fault they are the
/// fault's, and do not.
#[test]
fn timeouts_in_a_fleet_where_nothing_is_slow_are_the_machines() {
    let judge = |yaml: &str, timeouts: u64| {
        let t = Topology::from_yaml(yaml, "t.yaml").unwrap();
        let p = crate::topology::model::predict(&t, &t.policy);
        let mut counts = Counts {
            services: vec![ServiceCounts::default(); t.services.len()],
            edges: vec![Default::default(); t.edges.len()],
            root: Default::default(),
            replicas: vec![],
            outliers: vec![],
            roots: vec![],
        };
        counts.root.sent = 1000;
        counts.root.ok = 1000;
        counts.services[1].timeouts = timeouts;
        let w = Window {
            counts,
            dt: 1.0,
            topology: &t,
            prediction: &p,
            static_radius: 0,
            radius: RadiusStats::default(),
            root_latency_ms: (0.0, 0.0),
            queue_peaks: vec![0; t.services.len()],
            cache: Default::default(),
        };
        saturation(&Figures::measure(&w, Scope::Fleet, 0))
    };
    let instant = "name: t\nservices:\n  A: { calls: [B] }\n  B: {}\n";
    let why = judge(instant, 5);
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(why[0].starts_with("5 requests timed out in a fleet where nothing is slow"));
    // One in a thousand is within the threshold, as are two.
    assert!(judge(instant, 1).is_empty());
    let slow = "name: t\nservices:\n  A: { calls: [B] }\n  B: { fault: { latency: 2s } }\n";
    assert!(judge(slow, 5).is_empty());
    let working = "name: t\nservices:\n  A: { calls: [B] }\n  B: { work: 300ms }\n";
    assert!(judge(working, 5).is_empty());
}

#[test]
fn figures_nest_by_path_and_counts_are_whole() {
    let mut f = Figures::filled(Scope::Service, 0.0);
    f.set(Figure::ClaimsReturnedTrue, 3.0);
    f.set(Figure::Amplification, 1.5);
    let v = serde_json::to_value(&f).unwrap();
    assert_eq!(v["claims_returned"]["true"], 3);
    assert_eq!(v["amplification"], 1.5);
    assert!(v.get("root").is_none(), "fleet figures stay out");
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys[0], "rps", "catalogue order");
}

#[test]
fn wilsons_interval_holds_its_ends_and_narrows_with_the_count() {
    use super::wilson;
    let (lo, hi) = wilson(0, 10);
    assert_eq!(lo, 0.0);
    assert!((hi - 0.2775).abs() < 1e-3, "{hi}");
    let (lo, hi) = wilson(50, 100);
    assert!(
        (lo - 0.4038).abs() < 1e-3 && (hi - 0.5962).abs() < 1e-3,
        "{lo} {hi}"
    );
    let (a, b) = wilson(500, 1000);
    assert!(b - a < hi - lo);
    assert!(wilson(0, 0).0.is_nan());
}
