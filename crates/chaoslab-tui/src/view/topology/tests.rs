//! The layout's promises: chains in one row, snakes, trees without
//! crossings, scrolling to the selection.

use super::*;
use crate::fixtures;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

fn draw(s: &Snapshot, w: u16, tall: bool, selected: usize) -> Vec<String> {
    let plan = GraphLayout::new(s, w, tall);
    let area = Rect::new(0, 0, w, plan.height());
    let mut buf = Buffer::empty(area);
    plan.render(s, selected, area, &mut buf);
    (0..area.height)
        .map(|y| {
            (0..w)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

#[test]
fn a_chain_is_one_row_when_it_fits() {
    let s = fixtures::uber_chain_retry();
    let lines = draw(&s, 150, false, 99);
    assert_eq!(lines.len(), 1);
    let l = &lines[0];
    for (name, amp) in [
        ("A", "1.00×"),
        ("B", "2.00×"),
        ("C", "4.00×"),
        ("D", "8.00×"),
    ] {
        assert!(l.contains(&format!("{name} {amp}")), "{l}");
    }
    assert!(
        l.contains("↻200▶") && l.contains("↻400▶") && l.contains("↻800▶"),
        "{l}"
    );
}

#[test]
fn a_deep_chain_snakes_and_nothing_overlaps() {
    let s = fixtures::deep_chain();
    let lines = draw(&s, 78, false, 0);
    // Every service appears once, whole.
    for v in &s.services {
        let n = lines
            .iter()
            .filter(|l| l.contains(&format!(" {} ", v.name)))
            .count();
        assert_eq!(n, 1, "{} in {lines:#?}", v.name);
    }
    assert!(lines.len() > 3);
    assert!(lines.iter().any(|l| l.starts_with('┌')), "{lines:#?}");
}

#[test]
fn a_tree_branches_without_crossing() {
    let s = fixtures::fanout();
    let lines = draw(&s, 120, false, 0);
    assert!(
        lines[0].contains("gateway") && lines[0].contains("auth"),
        "{lines:#?}"
    );
    assert!(lines.iter().any(|l| l.contains("├") || l.contains("└")));
    assert_eq!(lines.len(), 6, "{lines:#?}");
    assert!(!lines.iter().any(|l| l.contains('┼')), "{lines:#?}");
}

#[test]
fn the_view_scrolls_to_the_selected_service() {
    let s = fixtures::deep_chain();
    let plan = GraphLayout::new(&s, 60, false);
    assert!(plan.height() > 4);
    let area = Rect::new(0, 0, 60, 3);
    let mut buf = Buffer::empty(area);
    plan.render(&s, 24, area, &mut buf);
    let text: String = (0..3)
        .flat_map(|y| (0..60).map(move |x| (x, y)))
        .map(|p| buf[p].symbol().to_string())
        .collect();
    assert!(text.contains("S25"), "{text}");
}

#[test]
fn a_joining_dag_points_back_instead_of_crossing() {
    let mut s = fixtures::fanout();
    // auth also calls inventory: inventory is drawn once.
    s.edges.push(crate::lab::snapshot::EdgeView {
        from: 1,
        to: 3,
        attempt_rps: 200.0,
        retry_rps: 0.0,
        budget: None,
        breaker: 0,
        outliers: vec![],
    });
    let lines = draw(&s, 120, false, 0);
    let all = lines.join("\n");
    assert_eq!(all.matches("inventory").count(), 2, "{all}");
    assert!(all.contains("↪ inventory"), "{all}");
}

#[test]
fn an_open_breaker_shows_on_its_arrow_and_in_the_legend() {
    let mut s = fixtures::uber_chain_retry();
    let legend_of = |s: &Snapshot| {
        legend(s)
            .spans
            .iter()
            .map(|x| x.content.to_string())
            .collect::<String>()
    };
    assert!(!legend_of(&s).contains("breaker"));
    s.edges[0].breaker = 2;
    s.edges[1].breaker = 1;
    let l = &draw(&s, 150, false, 99)[0];
    assert!(l.contains("↻200⊘") && l.contains("↻400◐"), "{l}");
    assert!(legend_of(&s).contains("⊘ breaker open"));
}
