use super::*;

#[test]
fn capacity_shows_only_with_workers() {
    let text = std::fs::read_to_string(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("topologies/metastable.yaml"),
    )
    .unwrap();
    let t = Topology::from_yaml(&text, "metastable.yaml").unwrap();
    let out = render_check(&t);
    for want in [
            "the end user gives up after 3s",
            "workers 4, queue 1000",
            "capacity at 120 rps offered",
            "  DB             4   1000   25ms   160 rps   75%    75%     75%        75%",
            "  none       160 rps at DB: the 120 rps offered is below it",
            "  retry      53.3 rps at DB: the 120 rps offered is above it: a trigger that fills the queue leaves the fleet down under retry",
            "  budget     145.5 rps at DB: the 120 rps offered is below it",
            "  ownership  145.5 rps at DB",
        ] {
            assert!(out.contains(want), "no `{want}` in:\n{out}");
        }
    assert!(!out.contains("lower bounds"), "{out}");
    let t = Topology::from_yaml(
            "name: t\npolicy: { deadline: propagate }\nservices:\n  A: { calls: [B] }\n  B: { workers: 1, work: 1ms }\n",
            "t.yaml",
        )
        .unwrap();
    let out = render_check(&t);
    assert!(out.contains("deadline propagate"), "{out}");
    assert!(out.contains("lower bounds"), "{out}");
    let t = Topology::from_yaml("name: t\nservices:\n  A: { work: 5ms }\n", "t.yaml").unwrap();
    let out = render_check(&t);
    assert!(
        !out.contains("capacity") && !out.contains("threshold"),
        "{out}"
    );
}

#[test]
fn wrap_breaks_at_the_width() {
    assert_eq!(wrap("a b c", 3), ["a b", "c"]);
}
