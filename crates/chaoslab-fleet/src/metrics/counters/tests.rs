use super::*;

#[test]
fn a_window_of_latency_counts_reads_its_own_percentiles() {
    let mut early = LatencyCounts::default();
    for _ in 0..100 {
        early.record(1_000);
    }
    let mut late = early;
    for _ in 0..99 {
        late.record(2_000);
    }
    late.record(50_000);
    let w = late.since(&early);
    assert!((w.quantile_ms(0.5).unwrap() - 2.0).abs() <= 0.25);
    assert!((w.quantile_ms(1.0).unwrap() - 50.0).abs() <= 6.25);
    assert_eq!(LatencyCounts::default().quantile_ms(0.5), None);
}

#[test]
fn an_outside_service_is_counted_from_its_callers_attempts() {
    // 0 -> 1 (in the fleet) and 0 -> 2 (outside).
    let m = Metrics::new(3, vec![(0, 1), (0, 2)]).with_outside(&[false, false, true]);
    let attempt = |edge, outcome, timed_out| Attempted {
        service: 0,
        edge,
        attempt: 0,
        outcome,
        late: false,
        elapsed: Duration::from_millis(2),
        timed_out,
        cancelled: false,
    };
    let error = |claim| Classified::Error { claim };
    for (outcome, timed_out) in [
        (Classified::Success, false),
        (error(Claim::Claimed), false),
        (error(Claim::Missing), false),
        (Classified::NoResponse, true),
        (Classified::NoResponse, false),
    ] {
        m.attempted(&attempt(1, outcome, timed_out));
        // The fleet service counts its own side when it serves.
        m.attempted(&attempt(0, outcome, timed_out));
    }
    let c = m.counts();
    let x = &c.services[2];
    assert_eq!(x.requests, 5);
    assert_eq!(x.errors, 3, "a claimed and an unclaimed 500, a reset");
    assert_eq!(x.claims_returned, [1, 0, 2]);
    assert_eq!(x.timeouts, 1);
    assert!((x.latency.quantile_ms(0.5).unwrap() - 2.0).abs() <= 0.25);
    assert_eq!(c.services[1], ServiceCounts::default());
    // The caller saw what it always saw.
    assert_eq!(c.services[0].claims_seen, [2, 0, 6]);
    assert_eq!(c.edges[0].attempts, 5);
    assert_eq!(c.edges[1].attempts, 5);
}

#[test]
fn outlier_rows_hold_each_edge_to_a_replicated_callee() {
    // 0 -> 1 (three replicas), 0 -> 2 (one): rows for edge 0 only.
    let m = Metrics::new(3, vec![(0, 1), (0, 2)]).with_outliers(&[3, 1]);
    m.set_outliers(0, [(false, 0), (true, 2), (false, 1)].into_iter());
    m.set_outliers(1, [(true, 9)].into_iter());
    let before = m.counts();
    let rows: Vec<(usize, u32, u64, u64)> = before
        .outliers
        .iter()
        .map(|o| (o.edge, o.replica, o.ejections, o.ejected))
        .collect();
    assert_eq!(rows, [(0, 0, 0, 0), (0, 1, 2, 1), (0, 2, 1, 0)]);
    assert_eq!(before.outliers_of(0).len(), 3);
    assert!(before.outliers_of(1).is_empty() && before.outliers_of(7).is_empty());
    // A window counts the ejections in it and the gauge at its end.
    m.set_outliers(0, [(false, 0), (false, 3), (false, 1)].into_iter());
    let w = m.counts().since(&before);
    assert_eq!((w.outliers[1].ejections, w.outliers[1].ejected), (1, 0));
    // Through the wire and back, as a node's counts travel.
    let back: Counts = super::super::WireCounts::from(&m.counts()).into();
    assert_eq!(back.outliers, m.counts().outliers);
}

#[test]
fn served_requests_land_in_their_service_latency() {
    let m = Metrics::new(2, vec![(0, 1)]);
    for ms in [1u64, 1, 1, 30] {
        m.served(&Served {
            service: 1,
            trace: crate::observe::Trace { root: 0, depth: 1 },
            is_root: false,
            status: 200,
            claim: None,
            own_fault: false,
            dependency_failed: false,
            elapsed: Duration::from_millis(ms),
        });
    }
    let c = m.counts();
    assert_eq!(c.services[0].latency.quantile_ms(0.5), None);
    let b = &c.services[1].latency;
    assert!((b.quantile_ms(0.5).unwrap() - 1.0).abs() <= 0.125);
    assert!((b.quantile_ms(0.99).unwrap() - 30.0).abs() <= 3.75);
}
