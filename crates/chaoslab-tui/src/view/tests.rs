//! Whole screens as text: insta snapshots of `TestBackend` frames drawn
//! from hand-built snapshots (see `tui::fixtures`). Review a changed
//! `.snap` as a person would: figures whole, nothing overlapping.

use ratatui::backend::TestBackend;
use ratatui::style::{Color, Modifier};
use ratatui::Terminal;

use super::draw;
use super::theme::Theme;
use crate::fixtures;
use crate::keys::Msg;
use crate::lab::Snapshot;
use crate::state::State;
use crate::update::update;

pub(super) fn screen(state: &State, s: &Snapshot, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("a test terminal");
    t.draw(|f| draw(state, s, f, true)).expect("draws");
    t
}

fn select(s: &Snapshot, name: &str) -> State {
    let mut st = State::new();
    st.selected = s
        .services
        .iter()
        .position(|v| v.name == name)
        .expect("the service exists");
    st
}

pub(super) fn text(t: &Terminal<TestBackend>) -> String {
    t.backend().to_string()
}

#[test]
fn uber_chain_healthy() {
    let s = fixtures::uber_chain_healthy();
    let t = screen(&State::new(), &s, 160, 45);
    insta::assert_snapshot!("uber_chain_healthy_160x45", t.backend());
}

#[test]
fn uber_chain_storm_under_retry() {
    let s = fixtures::uber_chain_retry();
    let t = screen(&select(&s, "D"), &s, 160, 45);
    let out = text(&t);
    for fig in ["1.00×", "2.00×", "4.00×", "8.00×", "↻800/s", "RETRY"] {
        assert!(out.contains(fig), "{fig} missing");
    }
    insta::assert_snapshot!("uber_chain_retry_160x45", t.backend());
}

#[test]
fn uber_chain_under_ownership() {
    let s = fixtures::uber_chain_ownership();
    let t = screen(&select(&s, "D"), &s, 160, 45);
    let out = text(&t);
    assert!(out.contains("1.10×") && out.contains("OWNERSHIP") && out.contains("↻20/s"));
    insta::assert_snapshot!("uber_chain_ownership_160x45", t.backend());
}

#[test]
fn the_wire_tap_shows_the_claim_headers_and_decisions_of_the_selected_service() {
    use crate::lab::snapshot::TapLine;
    use std::time::Duration;
    let mut s = fixtures::uber_chain_ownership();
    let line = |seq: u64, from: usize, to: usize, claim: &str, then: &str| TapLine {
        seq,
        t: Duration::from_millis(4000 + 100 * seq),
        from,
        to,
        names: (s.services[from].name.clone(), s.services[to].name.clone()),
        status: Some(500),
        header: Some(format!("x-error-claim: {claim}")),
        then: then.into(),
    };
    s.tap = vec![
        line(1, 2, 3, "true", "retried"),
        line(2, 1, 2, "false", "not retried: unclaimed"),
        line(3, 0, 1, "false", "not retried: unclaimed"),
        line(4, 2, 3, "true", "not retried: budget"),
    ];
    let mut st = select(&s, "C");
    update(&mut st, &s, Msg::ToggleTap);
    let t = screen(&st, &s, 160, 45);
    let out = text(&t);
    assert!(out.contains("wire tap · C"), "{out}");
    assert!(
        out.contains("C → D  500  x-error-claim: true  (retried)"),
        "{out}"
    );
    assert!(out.contains("B → C  500  x-error-claim: false  (not retried: unclaimed)"));
    assert!(!out.contains("A → B"), "only C's exchanges");
    insta::assert_snapshot!("wire_tap_160x45", t.backend());
}

/// A scenario playing: the strip, the caption, the newest verdicts; and
/// at its end the verdict.
#[test]
fn the_scenario_banner_shows_the_caption_the_steps_and_the_verdicts() {
    use crate::lab::timeline::TimelineView;
    use crate::play::Judged;
    use std::time::Duration;
    let secs = Duration::from_secs;
    let mut s = fixtures::uber_chain_retry();
    s.timeline = Some(TimelineView {
        now: Duration::from_millis(8400),
        marks: vec![
            secs(0),
            secs(0),
            secs(6),
            secs(10),
            secs(14),
            secs(18),
            secs(22),
        ],
        played: 4,
        total: 14,
        next: Some(secs(10)),
        held: false,
        caption: Some((
            secs(6),
            "D fails every request. Each hop above retries, so D sees 8 times its load.".into(),
        )),
    });
    let judged = |what: &str, closes: u64, passed: Option<bool>, observed: f64| Judged {
        what: what.into(),
        closes: secs(closes),
        passed,
        observed,
    };
    let mut st = select(&s, "D");
    st.scenario_end = Some(secs(26));
    st.verdicts = vec![
        judged("root_availability >= 0.999", 6, Some(true), 1.0),
        judged("D amplification ≈ 1 ± 5%", 6, Some(true), 1.0),
        judged("D amplification ≈ 8 ± 5%", 10, None, 0.0),
    ];
    let t = screen(&st, &s, 160, 45);
    let out = text(&t);
    assert!(out.contains("» D fails every request"), "{out}");
    assert!(out.contains("step 3/7 · ✓2 ✗0 · 1 to come"), "{out}");
    assert!(out.contains("✓ D amplification ≈ 1 ± 5% (1.000)"), "{out}");
    insta::assert_snapshot!("scenario_banner_160x45", t.backend());

    // The end: every window judged.
    if let Some(tl) = s.timeline.as_mut() {
        tl.now = secs(26);
        tl.held = true;
    }
    st.verdicts[2].passed = Some(false);
    st.verdicts[2].observed = 6.25;
    let t = screen(&st, &s, 80, 24);
    let out = text(&t);
    assert!(out.contains("HELD"), "{out}");
    assert!(
        out.contains("FAIL  1 of 3 expectations failed: D amplification ≈ 8 ± 5%"),
        "{out}"
    );
    insta::assert_snapshot!("scenario_verdict_80x24", t.backend());
}

#[test]
fn help_overlay() {
    let s = fixtures::uber_chain_retry();
    let mut st = State::new();
    update(&mut st, &s, Msg::Help);
    let t = screen(&st, &s, 160, 45);
    insta::assert_snapshot!("help_160x45", t.backend());
}

#[test]
fn help_says_where_the_endpoints_listen() {
    let s = fixtures::uber_chain_retry();
    let mut st = State::new();
    st.listening = vec![
        "metrics: http://127.0.0.1:9100/metrics".into(),
        "control: http://127.0.0.1:9200/ (GET /state, POST /actions, GET /report)".into(),
    ];
    update(&mut st, &s, Msg::Help);
    let out = text(&screen(&st, &s, 160, 45));
    assert!(
        out.contains("metrics: http://127.0.0.1:9100/metrics")
            && out.contains("control: http://127.0.0.1:9200/"),
        "{out}"
    );
}

#[test]
fn deep_chain_of_25() {
    let s = fixtures::deep_chain();
    let t = screen(&select(&s, "S25"), &s, 160, 45);
    let out = text(&t);
    for v in &s.services {
        assert!(out.contains(&v.name), "{} missing", v.name);
    }
    insta::assert_snapshot!("deep_chain_160x45", t.backend());
}

#[test]
fn fanout_dag() {
    let s = fixtures::fanout();
    let t = screen(&select(&s, "shard2"), &s, 160, 45);
    insta::assert_snapshot!("fanout_160x45", t.backend());
}

#[test]
fn small_terminal_80x24() {
    let s = fixtures::uber_chain_retry();
    let t = screen(&select(&s, "D"), &s, 80, 24);
    let out = text(&t);
    for name in ["A", "B", "C", "D", "E", "F", "G"] {
        assert!(out.contains(&format!("{name} ")), "{name} missing");
    }
    assert!(out.contains("8.00×"));
    insta::assert_snapshot!("uber_chain_retry_80x24", t.backend());
}

#[test]
fn small_terminal_help_80x24() {
    let s = fixtures::uber_chain_retry();
    let mut st = State::new();
    update(&mut st, &s, Msg::Help);
    let t = screen(&st, &s, 80, 24);
    insta::assert_snapshot!("help_80x24", t.backend());
}

#[test]
fn deep_chain_80x24() {
    let s = fixtures::deep_chain();
    let t = screen(&select(&s, "S25"), &s, 80, 24);
    assert!(
        text(&t).contains("S25"),
        "the selected service stays in sight"
    );
    insta::assert_snapshot!("deep_chain_80x24", t.backend());
}

#[test]
fn metastable_storm_160x45() {
    let s = fixtures::metastable_storm();
    let t = screen(&select(&s, "DB"), &s, 160, 45);
    let out = text(&t);
    for fig in ["100%", "q 1000▲", "threshold", "goodput", "p99 ms", "w/W"] {
        assert!(out.contains(fig), "{fig} missing");
    }
    insta::assert_snapshot!("metastable_storm_160x45", t.backend());
}

#[test]
fn metastable_storm_80x24() {
    let s = fixtures::metastable_storm();
    let t = screen(&select(&s, "DB"), &s, 80, 24);
    let out = text(&t);
    for fig in ["100%", "q 1000▲", "goodput"] {
        assert!(out.contains(fig), "{fig} missing");
    }
    insta::assert_snapshot!("metastable_storm_80x24", t.backend());
}

#[test]
fn metastable_help_lists_the_capacity_keys() {
    let s = fixtures::metastable_storm();
    let mut st = State::new();
    update(&mut st, &s, Msg::Help);
    for (w, h) in [(160, 45), (80, 24)] {
        let out = text(&screen(&st, &s, w, h));
        assert!(
            out.contains("w  W") && out.contains("l  L"),
            "{w}x{h}\n{out}"
        );
    }
}

#[test]
fn a_saturated_service_is_red_and_reads_without_colour() {
    let s = fixtures::metastable_storm();
    let st = select(&s, "A");
    let t = screen(&st, &s, 160, 45);
    let buf = t.backend().buffer();
    let (x, y) = find(buf, "100%").expect("DB's utilisation");
    assert_eq!(buf[(x, y)].fg, Color::Red);
}

/// Every look the dashboard has: the full layout and `--big`, each dark
/// and light.
fn looks(st: &State) -> Vec<State> {
    let mut out = vec![];
    for big in [false, true] {
        for theme in Theme::ALL {
            out.push(State {
                big,
                theme,
                ..st.clone()
            });
        }
    }
    out
}

#[test]
fn tiny_terminals_do_not_panic() {
    const SIZES: [(u16, u16); 12] = [
        (1, 1),
        (10, 3),
        (20, 6),
        (25, 12),
        (30, 8),
        (31, 14),
        (40, 10),
        (60, 15),
        (80, 24),
        (100, 30),
        (120, 40),
        (200, 60),
    ];
    let cases = [
        (fixtures::deep_chain(), "S13"),
        (fixtures::metastable_storm(), "DB"),
        (fixtures::uber_chain_retry(), "G"),
        (fixtures::fanout(), "shard2"),
    ];
    for (s, name) in &cases {
        for st in looks(&select(s, name)) {
            for (w, h) in SIZES {
                let _ = screen(&st, s, w, h);
                let mut help = st.clone();
                update(&mut help, s, Msg::Help);
                let _ = screen(&help, s, w, h);
            }
        }
    }
}

fn big(st: State) -> State {
    State { big: true, ..st }
}

#[test]
fn big_storm_under_retry_160x45() {
    let s = fixtures::uber_chain_retry();
    let t = screen(&big(select(&s, "D")), &s, 160, 45);
    let out = text(&t);
    // The amplifications in block glyphs: 8.00× is `█▀█` over `█▀█`.
    assert!(out.contains("█▀█   █▀█ █▀█ ▄ ▄"), "{out}");
    // The policy too: RETRY's R, E, T, R, Y.
    assert!(out.contains("█▀▄ █▀▀ ▀█▀ █▀▄ █ █"), "{out}");
    for fig in ["storm radius", "8.00×", "failing, claims its errors"] {
        assert!(out.contains(fig), "{fig} missing\n{out}");
    }
    assert!(!out.contains("events"), "no event log");
    assert!(!out.contains("returned t/f/-"), "the table is cut down");
    insta::assert_snapshot!("big_uber_chain_retry_160x45", t.backend());
}

#[test]
fn big_storm_under_retry_80x24() {
    let s = fixtures::uber_chain_retry();
    let t = screen(&big(select(&s, "D")), &s, 80, 24);
    let out = text(&t);
    for name in ["A", "B", "C", "D", "E", "F", "G"] {
        assert!(out.contains(&format!("{name} ")), "{name} missing\n{out}");
    }
    assert!(
        out.contains("RETRY") && out.contains("storm radius 3"),
        "{out}"
    );
    insta::assert_snapshot!("big_uber_chain_retry_80x24", t.backend());
}

/// On a fleet with workers the figure that matters is how busy each
/// service is: under its box and in the cut table.
#[test]
fn big_metastable_shows_how_busy_and_how_queued() {
    let s = fixtures::metastable_storm();
    let t = screen(&big(select(&s, "DB")), &s, 120, 34);
    let out = text(&t);
    for fig in ["100% busy · q 1000▲", "util", "queue"] {
        assert!(out.contains(fig), "{fig} missing:\n{out}");
    }
    insta::assert_snapshot!("big_metastable_120x34", t.backend());
}

#[test]
fn big_scrolls_to_the_selected_service() {
    let s = fixtures::uber_chain_retry();
    let top = text(&screen(&big(select(&s, "A")), &s, 80, 24));
    let bottom = text(&screen(&big(select(&s, "G")), &s, 80, 24));
    assert!(top.contains("1–4 of 7 in depth order"), "{top}");
    assert!(bottom.contains("5–7 of 7 in depth order"), "{bottom}");
}

#[test]
fn big_writes_long_names_small_and_shows_callers_an_arrow_cannot() {
    let s = fixtures::fanout();
    let out = text(&screen(&big(select(&s, "shard2")), &s, 160, 45));
    for v in &s.services {
        assert!(out.contains(&v.name), "{} missing\n{out}", v.name);
    }
    assert!(out.contains("← "), "{out}");
}

fn light(st: State) -> State {
    State {
        theme: Theme::Light,
        ..st
    }
}

#[test]
fn light_storm_under_retry_160x45() {
    let s = fixtures::uber_chain_retry();
    let st = select(&s, "D");
    let t = screen(&light(st.clone()), &s, 160, 45);
    assert_eq!(
        text(&t),
        text(&screen(&st, &s, 160, 45)),
        "a theme changes colours, never text"
    );
    insta::assert_snapshot!("light_uber_chain_retry_160x45", t.backend());
}

#[test]
fn the_light_theme_draws_dark_on_light() {
    let s = fixtures::uber_chain_retry();
    let st = select(&s, "A");
    let dark = screen(&st, &s, 160, 45);
    let lit = screen(&light(st.clone()), &s, 160, 45);
    let (d, l) = (dark.backend().buffer(), lit.backend().buffer());
    // Plain text (the topology's name in the header): dark ink on the
    // light page, where the dark theme leaves the terminal's own.
    let (x, y) = find(l, "uber-chain").expect("the header");
    assert_eq!((d[(x, y)].fg, d[(x, y)].bg), (Color::Reset, Color::Reset));
    let (ink, page) = (l[(x, y)].fg, l[(x, y)].bg);
    assert!(![Color::Reset, Color::White, Color::Gray].contains(&ink));
    assert_eq!(ink, Color::Indexed(234));
    assert_eq!(page, Color::Indexed(255));
    // Every cell has the page or a fill behind it, and no white text
    // outside a fill.
    assert!(l.content().iter().all(|c| c.bg != Color::Reset));
    assert!(l
        .content()
        .iter()
        .filter(|c| c.bg == page)
        .all(|c| c.fg != Color::White && c.fg != Color::Indexed(231)));
    // The alarm (A's retries, `↻200/s`): a dark red, not the ANSI red.
    let (x, y) = find(d, "↻200/s").expect("A's retries");
    assert_eq!(d[(x, y)].fg, Color::Red);
    assert_eq!(l[(x, y)].fg, Color::Indexed(124));
    // Labels: a firm grey instead of the dim attribute.
    let (x, y) = find(l, "policy").expect("the policy label");
    assert!(d[(x, y)].modifier.contains(Modifier::DIM));
    assert!(!l[(x, y)].modifier.contains(Modifier::DIM));
    assert_eq!(l[(x, y)].fg, Color::Indexed(240));
    // D's pill keeps a red fill and white text; C's yellow one turns a
    // yellow fill with black text; the warning colour as text is brown.
    let (x, y) = find(l, "✗ D").expect("D's pill");
    assert_eq!(
        (l[(x, y)].bg, l[(x, y)].fg),
        (Color::Indexed(160), Color::Indexed(231))
    );
    let (x, y) = find(l, "↑ C").expect("C's pill");
    assert_eq!(
        (l[(x, y)].bg, l[(x, y)].fg),
        (Color::Indexed(220), Color::Indexed(16))
    );
}

#[test]
fn no_color_wins_over_the_light_theme() {
    let s = fixtures::uber_chain_retry();
    for st in looks(&select(&s, "D")) {
        let mut t = Terminal::new(TestBackend::new(160, 45)).unwrap();
        t.draw(|f| draw(&st, &s, f, false)).unwrap();
        let buf = t.backend().buffer();
        assert!(
            buf.content()
                .iter()
                .all(|c| c.fg == Color::Reset && c.bg == Color::Reset),
            "{:?} big {}",
            st.theme,
            st.big
        );
        // The labels keep their dim attribute: stripped, not repainted.
        let (x, y) = find(buf, "storm radius").expect("the radius");
        assert!(buf[(x, y)].modifier.contains(Modifier::DIM));
    }
}

#[test]
fn colours_follow_state_and_no_color_removes_them() {
    let s = fixtures::uber_chain_retry();
    let st = select(&s, "A");
    let t = screen(&st, &s, 160, 45);
    let buf = t.backend().buffer();
    // Find D's pill in the topology view: red, the owner.
    let (x, y) = find(buf, "✗ D").expect("D's pill");
    assert_eq!(buf[(x, y)].bg, Color::Red);
    let mut t2 = Terminal::new(TestBackend::new(160, 45)).unwrap();
    t2.draw(|f| draw(&st, &s, f, false)).unwrap();
    let buf2 = t2.backend().buffer();
    assert_eq!(text(&t), text(&t2), "the same text either way");
    assert!(buf2
        .content()
        .iter()
        .all(|c| c.fg == Color::Reset && c.bg == Color::Reset));
    // The selection still shows, by reverse video.
    let (x, y) = find(buf2, "↑ A").expect("A's pill");
    assert!(buf2[(x, y)].modifier.contains(Modifier::REVERSED));
}

fn find(buf: &ratatui::buffer::Buffer, needle: &str) -> Option<(u16, u16)> {
    let first = needle.chars().next()?;
    let n = needle.chars().count() as u16;
    for y in 0..buf.area.height {
        for x in 0..buf.area.width.saturating_sub(n) {
            if buf[(x, y)].symbol().starts_with(first) {
                let s: String = (0..n)
                    .map(|i| buf[(x + i, y)].symbol().to_string())
                    .collect();
                if s == needle {
                    return Some((x, y));
                }
            }
        }
    }
    None
}

#[test]
fn the_log_shows_what_the_endpoints_refused_in_time_order() {
    let mut s = fixtures::uber_chain_ownership();
    s.refused = vec![(
        std::time::Duration::from_secs_f64(s.t.as_secs_f64() - 0.5),
        "POST /actions from http://evil.example (refused: origin)".into(),
    )];
    let t = screen(&State::new(), &s, 160, 45);
    let out = text(&t);
    assert!(out.contains("(refused: origin)"), "{out}");
    // Newest at the bottom: the refusal after every event before it.
    let at = |needle: &str| out.find(needle);
    let refusal = at("(refused: origin)").unwrap();
    if let Some(e) = s.events.first().and_then(|e| at(&e.text)) {
        assert!(e < refusal, "{out}");
    }
}

#[test]
fn replicas_panel_80x24() {
    let s = fixtures::uber_chain_replicas();
    let mut st = select(&s, "D");
    update(&mut st, &s, Msg::ToggleReplicas);
    let t = screen(&st, &s, 80, 24);
    let shown = text(&t);
    assert!(shown.contains("replicas · D"), "{shown}");
    assert!(shown.contains("retry/s"), "every column fits: {shown}");
    assert!(shown.contains("9 more (a taller terminal)"), "{shown}");
    insta::assert_snapshot!("replicas_80x24", t.backend());
}

#[test]
fn replicas_panel_160x45_lists_every_replica() {
    let s = fixtures::uber_chain_replicas();
    let mut st = select(&s, "D");
    update(&mut st, &s, Msg::ToggleReplicas);
    let t = screen(&st, &s, 160, 45);
    let shown = text(&t);
    assert!(shown.contains("  9 "), "{shown}");
    assert!(!shown.contains("more (a taller"), "{shown}");
    insta::assert_snapshot!("replicas_160x45", t.backend());
}

#[test]
fn replicas_panel_shows_what_outlier_detection_did() {
    let s = fixtures::uber_chain_outliers();
    let mut st = select(&s, "D");
    update(&mut st, &s, Msg::ToggleReplicas);
    // Narrow: the outlier columns take the retries' place.
    let t = screen(&st, &s, 80, 24);
    let shown = text(&t);
    assert!(shown.contains("1st% out  ej"), "{shown}");
    assert!(!shown.contains("retry/s"), "{shown}");
    assert!(
        shown.contains("   0     4.0 100.0%   1.0% out   2"),
        "{shown}"
    );
    insta::assert_snapshot!("replicas_outliers_80x24", t.backend());
    let t = screen(&st, &s, 160, 45);
    let shown = text(&t);
    assert!(shown.contains("retry/s  out ejct"), "{shown}");
    assert!(shown.contains("  11.0%     0.0    -    0"), "{shown}");
    insta::assert_snapshot!("replicas_outliers_160x45", t.backend());
}

#[test]
fn roots_panel_80x24_lists_each_root_and_the_max_and_mean() {
    let s = fixtures::multi_root_endpoints();
    let mut st = select(&s, "A");
    update(&mut st, &s, Msg::ToggleRoots);
    let t = screen(&st, &s, 80, 24);
    let shown = text(&t);
    assert!(shown.contains(" roots "), "{shown}");
    assert!(
        shown.contains("static max 3, mean 2.00 (2 roots)"),
        "{shown}"
    );
    insta::assert_snapshot!("roots_80x24", t.backend());
    let shown = text(&screen(&st, &s, 160, 45));
    assert!(shown.contains("model%"), "{shown}");
    assert!(
        shown.contains("C/y              50    96.0    96.0     4.5      1      1"),
        "{shown}"
    );
}

#[test]
fn v_expands_a_service_into_its_endpoints() {
    let s = fixtures::multi_root_endpoints();
    let mut st = select(&s, "C/y");
    update(&mut st, &s, Msg::ToggleReplicas);
    let shown = text(&screen(&st, &s, 120, 30));
    assert!(shown.contains("endpoints, replicas · C"), "{shown}");
    assert!(shown.contains(" x "), "{shown}");
    assert!(shown.contains("▸y"), "{shown}");
    assert!(shown.contains("C: one replica"), "{shown}");
}

/// A mesh is not drawn: the callers of the selected service (the storm's
/// first, on opening), a level a line up to the roots, take the
/// topology's place; the table's title says what `/` and `A` left.
#[test]
fn a_mesh_shows_the_callers_of_its_storm_in_place_of_the_topology() {
    let mut mesh = fixtures::uber_chain_retry();
    let root = fixtures::multi_root_endpoints().roots[0].clone();
    mesh.roots = vec![root; crate::lab::roots::MESH_ROOTS + 2];
    let mut st = State::opening(&mesh);
    let out = text(&screen(&st, &mesh, 120, 40));
    assert!(!out.contains(" topology "), "{out}");
    assert!(out.contains(" callers of D, a level a line"), "{out}");
    // D, then C, B and A above it, one a level.
    for (h, name) in [(1, "C"), (2, "B"), (3, "A")] {
        let line = out
            .lines()
            .find(|l| l.contains(&format!(" ↑{h} ")))
            .unwrap();
        assert!(line.contains(&format!("1 caller: {name} ")), "{line}");
    }
    st.filter = "f".into();
    let out = text(&screen(&st, &mesh, 120, 40));
    assert!(out.contains("· /f · 1 of 7"), "{out}");
    st.filter.clear();
    st.ancestry = Some(st.selected);
    let out = text(&screen(&st, &mesh, 120, 40));
    assert!(
        out.contains("D and the 3 services above it, nearest first"),
        "{out}"
    );
    assert!(!out.contains("│  E "), "{out}");
}

/// `--big` on a mesh draws its boxes in the table's order: the storm's
/// services first, not the healthy entries a depth order opens on.
#[test]
fn big_on_a_mesh_draws_the_storms_services_first() {
    let chain = fixtures::uber_chain_retry();
    let st = State::opening(&chain);
    let (ids, mesh) = super::big::box_order(&st, &chain);
    assert!(!mesh);
    assert_eq!(chain.services[ids[0]].name, "A", "depth order");
    let mut mesh = chain.clone();
    let root = fixtures::multi_root_endpoints().roots[0].clone();
    mesh.roots = vec![root; crate::lab::roots::MESH_ROOTS + 2];
    let mut st = State::opening(&mesh);
    st.big = true;
    let (ids, is_mesh) = super::big::box_order(&st, &mesh);
    assert!(is_mesh);
    assert_eq!(ids, st.order(&mesh));
    assert_ne!(mesh.services[ids[0]].name, "A", "the storm first");
    // It draws, in a terminal too small for every box.
    let out = text(&screen(&st, &mesh, 60, 24));
    assert!(out.contains("in the table's order"), "{out}");
}
