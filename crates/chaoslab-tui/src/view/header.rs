//! The header: what is running and how the end user is doing, in chips
//! that wrap between figures (never inside one) when the terminal is
//! narrow, with shorter labels first.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::format;
use super::theme;
use crate::lab::LabState;
use crate::lab::Snapshot;
use error_ownership::edge_budget::BudgetModel;

/// One figure with its label, long and short.
struct Chip {
    long: Vec<Span<'static>>,
    short: Vec<Span<'static>>,
}

fn chip(long: Vec<Span<'static>>, short: Vec<Span<'static>>) -> Chip {
    Chip { long, short }
}

fn l(s: impl Into<String>) -> Span<'static> {
    Span::styled(s.into(), theme::label())
}

fn v(s: impl Into<String>) -> Span<'static> {
    Span::styled(s.into(), theme::figure())
}

fn on_off(b: bool) -> Span<'static> {
    if b {
        Span::styled("on", theme::figure())
    } else {
        Span::styled("off", theme::label())
    }
}

/// The budget in force and, for the industry's models, its live state:
/// the emptiest bucket or quota, the fullest retry slots.
fn budget_state(s: &Snapshot, c: &LabState) -> Span<'static> {
    let p = &c.policy;
    let Some(model) = p.budget_model().filter(|_| p.mode.retries) else {
        return Span::styled("off", theme::label());
    };
    let levels = s.edges.iter().filter_map(|e| e.budget);
    let text = match model {
        BudgetModel::Window {
            ratio, min_per_sec, ..
        } if min_per_sec > 0.0 => format!("{ratio} +{min_per_sec}/s"),
        BudgetModel::Window { ratio, .. } => format!("{ratio}"),
        BudgetModel::Concurrency { .. } => {
            let (n, cap) = levels
                .max_by(|a, b| (a.0 / a.1.max(1.0)).total_cmp(&(b.0 / b.1.max(1.0))))
                .unwrap_or((0.0, 0.0));
            format!("in flight {n:.0}/{cap:.0}")
        }
        BudgetModel::Tokens { max, .. } => {
            let left = levels.map(|l| l.0).fold(f64::from(max), f64::min);
            format!("tokens {left:.1}/{max}")
        }
        BudgetModel::Quota(q) => {
            let left = levels.map(|l| l.0).fold(f64::from(q.initial), f64::min);
            format!("quota {left:.0}/{}", q.initial)
        }
    };
    v(text)
}

/// The header's lines for a terminal `width` columns wide.
pub fn lines(s: &Snapshot, c: &LabState, width: u16) -> Vec<Line<'static>> {
    let p = &c.policy;
    let budget = budget_state(s, c);
    let status = if c.paused {
        Span::styled(" PAUSED ", theme::warn().add_modifier(Modifier::REVERSED))
    } else {
        Span::styled("● running", theme::good())
    };
    let title = vec![
        Span::styled(
            " chaoslab ",
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
        ),
        Span::raw(" "),
        v(s.topology.clone()),
    ];
    let attempts = if p.mode.retries {
        vec![l("R="), v(p.attempts.to_string())]
    } else {
        vec![l("retries "), on_off(false)]
    };
    let policy_name = Span::styled(format!(" {} ", p.name().to_uppercase()), theme::policy(p));
    let policy = vec![l("policy "), policy_name.clone()];
    let run = vec![status, Span::raw("  "), v(format::uptime(s.t))];
    let first = vec![
        chip(title.clone(), title),
        chip(policy, vec![policy_name]),
        chip(attempts.clone(), attempts),
        chip(vec![l("budget "), budget.clone()], vec![l("B "), budget]),
        chip(
            vec![l("ownership "), on_off(p.mode.ownership)],
            vec![l("own "), on_off(p.mode.ownership)],
        ),
        chip(
            vec![l("at-least-once "), on_off(c.at_least_once)],
            vec![l("ALO "), on_off(c.at_least_once)],
        ),
        chip(
            vec![l("attribution "), v(c.attribution.name())],
            vec![l("attr "), v(c.attribution.name())],
        ),
        chip(run.clone(), run),
    ];
    let r = &s.root;
    let avail = Span::styled(
        format::availability(r.availability),
        theme::availability(r.availability),
    );
    let radius_style = if s.radius_max > 1 {
        theme::alarm()
    } else {
        theme::figure()
    };
    let second = vec![
        entry(s, c),
        chip(
            vec![l("availability "), avail.clone()],
            vec![l("avail "), avail],
        ),
        chip(
            vec![
                l("p50 "),
                v(format::ms(r.p50_ms)),
                l(" · p99 "),
                v(format::ms(r.p99_ms)),
            ],
            if r.p99_ms < 999.95 {
                vec![
                    l("p50/p99 "),
                    v(format!("{:.1}/{:.1}", r.p50_ms, r.p99_ms)),
                    l(" ms"),
                ]
            } else {
                vec![
                    l("p50 "),
                    v(format::ms(r.p50_ms)),
                    l(" p99 "),
                    v(format::ms(r.p99_ms)),
                ]
            },
        ),
        chip(
            vec![
                l("storm radius "),
                Span::styled(s.radius_max.to_string(), radius_style),
                l(" max · "),
                v(format!("{:.2}", s.radius_mean)),
                l(" mean · static "),
                v(s.radius_static.to_string()),
            ],
            vec![
                l("radius "),
                Span::styled(s.radius_max.to_string(), radius_style),
                l("/"),
                v(format!("{:.2}", s.radius_mean)),
                l(" static "),
                v(s.radius_static.to_string()),
            ],
        ),
        chip(
            vec![
                l("spurious requests avoided "),
                v(s.spurious_avoided.to_string()),
            ],
            vec![l("spurious avoided "), v(s.spurious_avoided.to_string())],
        ),
    ];
    let mut lines = layout(&[first, second], width);
    if !s.saturation.is_empty() {
        // The machine could not carry the load: say so above the figures.
        lines.push(Line::from(vec![
            Span::styled(
                " SATURATED ",
                theme::alarm().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            ),
            Span::styled(
                format!(" figures are lower bounds: {}", s.saturation.join("; ")),
                theme::alarm(),
            ),
        ]));
    }
    lines
}

/// The entry's rates: offered and achieved; with workers in the fleet,
/// the model's recovery threshold beside the offered rate (red when the
/// offered rate is above it: a storm would not drain) and the goodput.
fn entry(s: &Snapshot, c: &LabState) -> Chip {
    let r = &s.root;
    let offered = v(format!("{:.0}", c.rps));
    let achieved = v(format!("{:.0}", r.rps));
    if let Some(think) = s.think {
        // A closed loop: its clients, what they offer while answers are
        // instant, and what they send, less while answers are slow.
        let clients = v(format!("{}", crate::topology::clients_at(c.rps, think)));
        return chip(
            vec![
                l("entry "),
                clients.clone(),
                l(" clients offer "),
                offered.clone(),
                l(" rps · "),
                achieved.clone(),
                l(" sent"),
            ],
            vec![
                l("entry "),
                clients,
                l(" clients "),
                offered,
                l("/"),
                achieved,
                l(" rps"),
            ],
        );
    }
    let threshold = s
        .recovery_threshold
        .filter(|t| t.is_finite() && super::has_workers(s))
        .map(|t| {
            let style = if c.rps > t {
                theme::alarm()
            } else {
                theme::good()
            };
            Span::styled(format!("{t:.0}"), style)
        });
    let Some(threshold) = threshold else {
        return chip(
            vec![
                l("entry "),
                offered.clone(),
                l(" rps offered · "),
                achieved.clone(),
                l(" achieved"),
            ],
            vec![l("entry "), offered, l("/"), achieved, l(" rps")],
        );
    };
    let ok = r.goodput_rps >= 0.95 * r.rps;
    let goodput = Span::styled(
        format!("{:.0}", r.goodput_rps),
        if ok { theme::good() } else { theme::alarm() },
    );
    chip(
        vec![
            l("entry "),
            offered.clone(),
            l(" rps offered (threshold "),
            threshold.clone(),
            l(") · "),
            achieved.clone(),
            l(" achieved · goodput "),
            goodput.clone(),
        ],
        vec![
            l("entry "),
            offered,
            l("/"),
            achieved,
            l(" rps · threshold "),
            threshold,
            l(" · goodput "),
            goodput,
        ],
    )
}

const SEP: &str = "   ";

fn width_of(spans: &[Span]) -> usize {
    spans.iter().map(|s| s.width()).sum()
}

/// Lays the groups of chips out: each group on one line, with long
/// labels where they fit (chips turn short from the right); if a group
/// cannot fit on one line even short, everything flows short, wrapping
/// between chips.
fn layout(groups: &[Vec<Chip>], width: u16) -> Vec<Line<'static>> {
    let w = width as usize;
    let mut lines = vec![];
    for g in groups {
        let mut short = vec![false; g.len()];
        let fits = |short: &[bool]| {
            1 + g
                .iter()
                .zip(short)
                .map(|(c, s)| width_of(if *s { &c.short } else { &c.long }))
                .sum::<usize>()
                + SEP.len() * g.len().saturating_sub(1)
                <= w
        };
        let mut i = g.len();
        while !fits(&short) && i > 0 {
            i -= 1;
            short[i] = true;
        }
        if !fits(&short) {
            let all: Vec<&Chip> = groups.iter().flatten().collect();
            return flow(&all, w, "  ");
        }
        let mut spans = vec![Span::raw(" ")];
        for (k, (c, s)) in g.iter().zip(&short).enumerate() {
            if k > 0 {
                spans.push(Span::raw(SEP));
            }
            spans.extend(if *s { c.short.clone() } else { c.long.clone() });
        }
        lines.push(Line::from(spans));
    }
    lines
}

/// Short chips on as few lines as they take, wrapping between chips.
fn flow(chips: &[&Chip], w: usize, sep: &str) -> Vec<Line<'static>> {
    let mut lines = vec![];
    let mut cur: Vec<Span<'static>> = vec![Span::raw(" ")];
    let mut used = 1;
    for c in chips {
        let spans = c.short.clone();
        let cw = width_of(&spans);
        if used > 1 && used + sep.len() + cw > w {
            lines.push(Line::from(std::mem::take(&mut cur)));
            cur.push(Span::raw(" "));
            used = 1;
        } else if used > 1 {
            cur.push(Span::raw(sep.to_string()));
            used += sep.len();
        }
        used += cw;
        cur.extend(spans);
    }
    if used > 1 {
        lines.push(Line::from(cur));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::topology::Preset;

    fn text(s: &Snapshot) -> String {
        lines(s, &s.state, 200)
            .iter()
            .flat_map(|l| l.spans.iter().map(|x| x.content.to_string()))
            .collect()
    }

    #[test]
    fn the_header_names_the_model_and_its_live_state() {
        let mut s = fixtures::uber_chain_retry();
        s.state.policy.apply_preset(Preset::Grpc);
        for (i, e) in s.edges.iter_mut().enumerate() {
            e.budget = Some((10.0 - i as f64 * 2.0, 10.0));
        }
        let t = text(&s);
        assert!(t.contains(" GRPC "), "{t}");
        assert!(
            t.contains("budget tokens 0.0/10"),
            "the emptiest bucket: {t}"
        );
        s.state.policy.apply_preset(Preset::Aws);
        for e in &mut s.edges {
            e.budget = Some((35.0, 500.0));
        }
        assert!(text(&s).contains("quota 35/500"));
        s.state.policy.apply_preset(Preset::Envoy);
        s.edges[2].budget = Some((3.0, 3.0));
        assert!(text(&s).contains("in flight 3/3"));
        s.state.policy.apply_preset(Preset::Finagle);
        assert!(text(&s).contains("0.2 +10/s"));
        s.state.policy.breaker = Some(error_ownership::breaker::BreakerConfig::DEFAULT);
        assert!(text(&s).contains(" FINAGLE+BREAKER "));
    }
}
