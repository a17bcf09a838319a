//! The help overlay (`?`): every key, grouped by theme, from the same
//! table the key handler uses, and what each figure on screen means.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Widget, Wrap};

use super::theme;
use crate::keys::{shown, KeyHelp, HELP};
use crate::lab::figures::Figure;

/// What a glossary line explains: a figure of the catalogue (its
/// one-line meaning is the catalogue's) or a mark only the dashboard draws.
enum Gloss {
    Figure(Figure),
    Mark(&'static str),
}

/// What the figures on screen mean, by their labels.
const GLOSSARY: &[(&str, Gloss)] = &[
    ("rps", Gloss::Figure(Figure::Rps)),
    ("amp", Gloss::Figure(Figure::Amplification)),
    ("model", Gloss::Figure(Figure::ModelAmplification)),
    (
        "t/f/-",
        Gloss::Mark(
            "x-error-claim values returned / seen: true (claimed), false (unclaimed), missing",
        ),
    ),
    ("suppressed", Gloss::Figure(Figure::RetriesSuppressed)),
    ("denied", Gloss::Figure(Figure::BudgetDenied)),
    ("storm radius", Gloss::Figure(Figure::StormRadius)),
    ("static", Gloss::Figure(Figure::StormRadiusStatic)),
    ("↻ N", Gloss::Mark("retries per second on that call")),
];

/// What the capacity figures mean, shown when some service has workers.
const CAPACITY_GLOSSARY: &[(&str, Gloss)] = &[
    ("util", Gloss::Figure(Figure::Utilisation)),
    ("queue", Gloss::Figure(Figure::QueueDepth)),
    ("p99 ms", Gloss::Figure(Figure::LatencyMsP99)),
    ("goodput", Gloss::Figure(Figure::GoodputRps)),
    (
        "threshold",
        Gloss::Mark("The model's recovery threshold under the policy in force: above this entry rate, a storm of timeouts never drains."),
    ),
];

/// The help lines shown: every key, the capacity keys only when `capacity`.
fn help(capacity: bool) -> Vec<&'static KeyHelp> {
    HELP.iter().filter(|h| shown(h, capacity)).collect()
}

fn group_lines(help: &[&KeyHelp], groups: &[&str], key_w: usize) -> Vec<Line<'static>> {
    let mut out = vec![];
    for g in groups {
        out.push(Line::from(Span::styled(
            g.to_string(),
            Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
        )));
        for h in help.iter().filter(|h| h.group == *g) {
            out.push(Line::from(vec![
                Span::styled(format!("  {:<key_w$} ", h.keys), theme::figure()),
                Span::raw(h.what),
            ]));
        }
        out.push(Line::default());
    }
    out
}

fn heading(s: &str) -> Line<'static> {
    Line::from(Span::styled(
        s.to_string(),
        Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
    ))
}

fn glossary(capacity: bool, listening: &[String]) -> Vec<Line<'static>> {
    let mut out = vec![];
    if !listening.is_empty() {
        out.push(heading("Listening"));
        for l in listening {
            out.push(Line::from(Span::styled(format!("  {l}"), theme::figure())));
        }
        out.push(Line::default());
    }
    out.push(heading("What the figures mean"));
    let extra: &[(&str, Gloss)] = if capacity { CAPACITY_GLOSSARY } else { &[] };
    for (k, what) in GLOSSARY.iter().chain(extra) {
        let text = match what {
            Gloss::Figure(f) => f.help(),
            Gloss::Mark(m) => m,
        };
        out.push(Line::from(vec![
            Span::styled(format!("  {k:<12} "), theme::figure()),
            Span::raw(text),
        ]));
    }
    out
}

/// The short form for small terminals: each group's keys in one
/// wrapped paragraph.
fn compact(help: &[&KeyHelp], groups: &[&str]) -> Vec<Line<'static>> {
    let mut out = vec![];
    for g in groups {
        let mut spans = vec![Span::styled(
            format!("{g}: "),
            Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
        )];
        for (i, h) in help.iter().filter(|h| h.group == *g).enumerate() {
            if i > 0 {
                spans.push(Span::styled(" · ", theme::label()));
            }
            spans.push(Span::styled(h.keys.to_string(), theme::figure()));
            spans.push(Span::raw(format!(" {}", h.what)));
        }
        out.push(Line::from(spans));
    }
    out
}

fn width(lines: &[Line]) -> u16 {
    lines.iter().map(|l| l.width()).max().unwrap_or(0) as u16
}

/// Draws the overlay centred in `area`: two columns of keys and the
/// glossary when there is room, one column when not, and on a small
/// terminal each group's keys as one wrapped paragraph. The capacity keys
/// and figures are shown when `capacity` (some service has workers).
pub fn render(area: Rect, buf: &mut Buffer, capacity: bool, listening: &[String]) {
    let help = help(capacity);
    let mut groups: Vec<&str> = vec![];
    for h in &help {
        if !groups.contains(&h.group) {
            groups.push(h.group);
        }
    }
    let key_w = help
        .iter()
        .map(|h| h.keys.chars().count())
        .max()
        .unwrap_or(8);
    let gloss = glossary(capacity, listening);
    // Two balanced columns.
    let sizes: Vec<usize> = groups
        .iter()
        .map(|g| help.iter().filter(|h| h.group == *g).count() + 2)
        .collect();
    let total: usize = sizes.iter().sum();
    let split = (1..groups.len())
        .min_by_key(|&k| {
            let left: usize = sizes[..k].iter().sum();
            left.max(total - left)
        })
        .unwrap_or(groups.len());
    let left = group_lines(&help, &groups[..split], key_w);
    let right = group_lines(&help, &groups[split..], key_w);
    let two_w = width(&left) + 3 + width(&right);
    let body = if two_w.max(width(&gloss)) + 4 <= area.width
        && (left.len().max(right.len()) + gloss.len()) as u16 + 2 <= area.height
    {
        Body::Two(left, right)
    } else {
        let one = group_lines(&help, &groups, key_w);
        if (one.len() + gloss.len()) as u16 + 2 <= area.height && width(&one) + 4 <= area.width {
            Body::One(one)
        } else {
            Body::Compact(compact(&help, &groups))
        }
    };
    let (keys_w, keys_h) = match &body {
        Body::Two(l, r) => (width(l) + 3 + width(r), l.len().max(r.len()) as u16),
        Body::One(l) => (width(l), l.len() as u16),
        Body::Compact(_) => (area.width.saturating_sub(4), 0),
    };
    let inner_w = keys_w.max(width(&gloss)).min(area.width.saturating_sub(6));
    let wrapped = |lines: &[Line]| -> u16 {
        lines
            .iter()
            .map(|l| (l.width() as u16).div_ceil(inner_w.max(1)).max(1))
            .sum()
    };
    let keys_h = match &body {
        Body::Compact(c) => wrapped(c),
        _ => keys_h,
    };
    let popup_h = (keys_h + wrapped(&gloss) + 2).min(area.height);
    let popup = Rect {
        x: area.x + area.width.saturating_sub(inner_w + 4) / 2,
        y: area.y + area.height.saturating_sub(popup_h) / 2,
        width: (inner_w + 4).min(area.width),
        height: popup_h,
    };
    Clear.render(popup, buf);
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(theme::border(true))
        .title(Line::from(Span::styled(
            " help · Esc or ? closes ",
            Style::new().add_modifier(Modifier::BOLD),
        )));
    let inner = block.inner(popup).inner(ratatui::layout::Margin::new(1, 0));
    block.render(popup, buf);
    let keys_area = Rect {
        height: keys_h.min(inner.height),
        ..inner
    };
    match body {
        Body::Two(l, r) => {
            let lw = width(&l) + 3;
            Paragraph::new(l).render(
                Rect {
                    width: lw,
                    ..keys_area
                },
                buf,
            );
            Paragraph::new(r).render(
                Rect {
                    x: keys_area.x + lw,
                    width: keys_area.width.saturating_sub(lw),
                    ..keys_area
                },
                buf,
            );
        }
        Body::One(l) => Paragraph::new(l).render(keys_area, buf),
        Body::Compact(c) => Paragraph::new(c)
            .wrap(Wrap { trim: false })
            .render(keys_area, buf),
    }
    let g = Rect {
        y: keys_area.y + keys_area.height,
        height: inner.height.saturating_sub(keys_area.height),
        ..inner
    };
    Paragraph::new(gloss)
        .wrap(Wrap { trim: false })
        .render(g, buf);
}

enum Body {
    Two(Vec<Line<'static>>, Vec<Line<'static>>),
    One(Vec<Line<'static>>),
    Compact(Vec<Line<'static>>),
}
