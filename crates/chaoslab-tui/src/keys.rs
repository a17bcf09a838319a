//! The key map: one table says which key does what, and both the key
//! handler ([`msg`]) and the help overlay and footer read it, so the
//! screen can never advertise a key that does something else.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::topology::Preset;

/// What a key asks for. [`super::update::update`] turns it into a state
/// change and, for keys that change the lab, an [`crate::scenario::Action`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Msg {
    /// Leave the dashboard.
    Quit,
    /// Open or close the help overlay.
    Help,
    /// Close the overlay.
    Escape,
    /// Focus the next panel.
    FocusNext,
    /// Focus the previous panel.
    FocusPrev,
    /// Up in the focused panel.
    Up,
    /// Down in the focused panel.
    Down,
    /// A page up.
    PageUp,
    /// A page down.
    PageDown,
    /// To the top.
    Home,
    /// To the bottom.
    End,
    /// Sort the table by the next column.
    Sort,
    /// Reverse the table's order.
    SortReverse,
    /// A shorter chart window.
    WindowShorter,
    /// A longer chart window.
    WindowLonger,
    /// The selected service's next fault: off, 100%, 50%, 10%, latency, down.
    CycleFault,
    /// The selected service's error rate, 10 points lower.
    ErrorDown,
    /// The selected service's error rate, 10 points higher.
    ErrorUp,
    /// The selected service down (connection refused) or back up.
    ToggleDown,
    /// Drop or restore the selected service's request context.
    ToggleContext,
    /// One worker fewer on the selected service.
    WorkersDown,
    /// One worker more on the selected service.
    WorkersUp,
    /// 100 ms more injected latency on the selected service.
    LatencyUp,
    /// 100 ms less injected latency on the selected service.
    LatencyDown,
    /// A policy preset.
    Preset(Preset),
    /// The next policy preset.
    CyclePreset,
    /// The budget on or off.
    ToggleBudget,
    /// Ownership on or off.
    ToggleOwnership,
    /// At-least-once (rule 5) on or off.
    ToggleAtLeastOnce,
    /// The next attribution mode.
    CycleAttribution,
    /// A higher entry rate.
    RateUp,
    /// A lower entry rate.
    RateDown,
    /// Pause or resume the load.
    Pause,
    /// Reset counters and charts.
    Reset,
    /// The wire tap in place of the event log, or back.
    ToggleTap,
    /// The selected service's replicas in place of the event log, or back.
    ToggleReplicas,
    /// The roots in place of the event log, or back.
    ToggleRoots,
    /// Play the scenario's next step now.
    NextStep,
    /// Hold the scenario's timeline, or let it run again.
    ToggleHold,
    /// The tour's next chapter.
    NextChapter,
    /// Start typing a filter on the table's service names (`/`).
    Filter,
    /// A character typed into the filter.
    Type(char),
    /// The filter's last character removed.
    TypeBack,
    /// The filter typed: keys act on the lab again, the filter stays.
    TypeDone,
    /// The table: the selected service and every service above it (its
    /// callers, their callers, up to the roots), or every service again.
    ToggleAncestry,
}

/// One line of help: a group, the keys as shown, what they do, and the
/// footer's short form (empty: not in the footer).
#[derive(Debug, Clone, Copy)]
pub struct KeyHelp {
    /// The theme it belongs to.
    pub group: &'static str,
    /// The keys as shown.
    pub keys: &'static str,
    /// What they do.
    pub what: &'static str,
    /// The footer's short label, or "" to leave it out of the footer.
    pub short: &'static str,
    /// Footer priority: lower numbers stay when the footer is narrow.
    pub rank: u8,
}

/// The group of the keys that change a service's capacity: the help and
/// the footer show it when some service has workers.
pub const CAPACITY: &str = "Capacity (selected service)";

/// Every key, grouped by theme, in the order the help shows them.
#[rustfmt::skip]
pub const HELP: &[KeyHelp] = &[
    KeyHelp { group: "Move", keys: "↑ ↓  j k", what: "select a service (scroll the log when it has focus)", short: "select", rank: 1 },
    KeyHelp { group: "Move", keys: "PgUp PgDn Home End", what: "jump", short: "", rank: 9 },
    KeyHelp { group: "Move", keys: "Tab  Shift-Tab", what: "focus the next / previous panel", short: "focus", rank: 8 },
    KeyHelp { group: "Move", keys: "s  S", what: "sort the table by the next column / reverse it", short: "sort", rank: 7 },
    KeyHelp { group: "Move", keys: "<  >", what: "shorter / longer chart window (15, 30, 60, 120 s)", short: "window", rank: 9 },
    KeyHelp { group: "Fault (selected service)", keys: "f", what: "cycle off → 100% → 50% → 10% errors → +1.5 s latency → down", short: "fault", rank: 1 },
    KeyHelp { group: "Fault (selected service)", keys: "e  E", what: "error rate 10 points lower / higher", short: "rate", rank: 4 },
    KeyHelp { group: "Fault (selected service)", keys: "x", what: "down (connection refused) / back up", short: "down", rank: 5 },
    KeyHelp { group: "Fault (selected service)", keys: "c", what: "drop / restore its request context", short: "context", rank: 3 },
    KeyHelp { group: CAPACITY, keys: "w  W", what: "one worker fewer / more (a service with workers)", short: "workers", rank: 2 },
    KeyHelp { group: CAPACITY, keys: "l  L", what: "100 ms more / less injected latency (held on a worker)", short: "latency", rank: 3 },
    KeyHelp { group: "Policy", keys: "1 2 3 4", what: "preset none / retry / budget / ownership", short: "policy", rank: 1 },
    KeyHelp { group: "Policy", keys: "5 6 7 8 9 0", what: "finagle / envoy / grpc / aws / aws-2026 / sre", short: "", rank: 9 },
    KeyHelp { group: "Policy", keys: "p", what: "next preset (all ten)", short: "", rank: 9 },
    KeyHelp { group: "Policy", keys: "b", what: "retry budget on / off", short: "budget", rank: 3 },
    KeyHelp { group: "Policy", keys: "o", what: "error ownership on / off", short: "ownership", rank: 2 },
    KeyHelp { group: "Policy", keys: "a", what: "at-least-once retry (rule 5) on / off", short: "at-least-once", rank: 6 },
    KeyHelp { group: "Policy", keys: "m", what: "attribution: simple → declared → learned", short: "attribution", rank: 6 },
    KeyHelp { group: "Load", keys: "+  -", what: "entry rate up / down a step", short: "rps", rank: 4 },
    KeyHelp { group: "Load", keys: "space", what: "pause / resume the load", short: "pause", rank: 4 },
    KeyHelp { group: "Load", keys: "r", what: "reset counters and charts", short: "reset", rank: 5 },
    KeyHelp { group: "Scenario (--scenario)", keys: "n", what: "the next step now (the rest of the timeline comes that much sooner)", short: "", rank: 9 },
    KeyHelp { group: "Scenario (--scenario)", keys: "P", what: "hold the timeline (the load keeps running) / let it run", short: "", rank: 9 },
    KeyHelp { group: "Scenario (--scenario)", keys: "Enter", what: "in `chaoslab tour`: the next chapter now", short: "", rank: 9 },
    KeyHelp { group: "Dashboard", keys: "t", what: "wire tap: the selected service's exchanges, status and claim header as sent, and what the caller did (in place of the events)", short: "tap", rank: 7 },
    KeyHelp { group: "Dashboard", keys: "v", what: "expand the selected service: its endpoints and replicas, each one's rate, errors and share of the first attempts (in place of the events)", short: "replicas", rank: 8 },
    KeyHelp { group: "Dashboard", keys: "/", what: "filter by name (Esc clears)", short: "filter", rank: 8 },
    KeyHelp { group: "Dashboard", keys: "A", what: "list the callers up to the roots / all", short: "callers", rank: 8 },
    KeyHelp { group: "Dashboard", keys: "u", what: "roots: each user-facing root's availability, p99 and storm radius (in place of the events)", short: "", rank: 9 },
    KeyHelp { group: "Dashboard", keys: "?", what: "this help", short: "help", rank: 0 },
    KeyHelp { group: "Dashboard", keys: "Esc", what: "close the help", short: "", rank: 9 },
    KeyHelp { group: "Dashboard", keys: "q  Ctrl-C", what: "quit and print the summary", short: "quit", rank: 0 },
];

/// Whether a help line is shown: capacity keys only when `capacity`
/// (some service has workers).
pub fn shown(h: &KeyHelp, capacity: bool) -> bool {
    capacity || h.group != CAPACITY
}

/// The footer's form of a help line's keys (shorter than the help's).
pub fn footer_keys(h: &KeyHelp) -> &'static str {
    match h.keys {
        "↑ ↓  j k" => "↑↓",
        "Tab  Shift-Tab" => "Tab",
        "s  S" => "s",
        "<  >" => "<>",
        "e  E" => "e/E",
        "w  W" => "w/W",
        "l  L" => "l/L",
        "1 2 3 4" => "1-4",
        "+  -" => "+/-",
        "q  Ctrl-C" => "q",
        k => k,
    }
}

/// The message a key stands for, if any.
pub fn msg(k: KeyEvent) -> Option<Msg> {
    if k.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    Some(match k.code {
        KeyCode::Char('c') if ctrl => Msg::Quit,
        _ if ctrl => return None,
        KeyCode::Char('q') => Msg::Quit,
        KeyCode::Char('?') => Msg::Help,
        KeyCode::Esc => Msg::Escape,
        KeyCode::Tab => Msg::FocusNext,
        KeyCode::BackTab => Msg::FocusPrev,
        KeyCode::Up | KeyCode::Char('k') => Msg::Up,
        KeyCode::Down | KeyCode::Char('j') => Msg::Down,
        KeyCode::PageUp => Msg::PageUp,
        KeyCode::PageDown => Msg::PageDown,
        KeyCode::Home | KeyCode::Char('g') => Msg::Home,
        KeyCode::End | KeyCode::Char('G') => Msg::End,
        KeyCode::Char('s') => Msg::Sort,
        KeyCode::Char('S') => Msg::SortReverse,
        KeyCode::Char('<') | KeyCode::Char(',') | KeyCode::Left => Msg::WindowShorter,
        KeyCode::Char('>') | KeyCode::Char('.') | KeyCode::Right => Msg::WindowLonger,
        KeyCode::Char('f') => Msg::CycleFault,
        KeyCode::Char('e') => Msg::ErrorDown,
        KeyCode::Char('E') => Msg::ErrorUp,
        KeyCode::Char('x') => Msg::ToggleDown,
        KeyCode::Char('c') => Msg::ToggleContext,
        KeyCode::Char('w') => Msg::WorkersDown,
        KeyCode::Char('W') => Msg::WorkersUp,
        KeyCode::Char('l') => Msg::LatencyUp,
        KeyCode::Char('L') => Msg::LatencyDown,
        KeyCode::Char('1') => Msg::Preset(Preset::None),
        KeyCode::Char('2') => Msg::Preset(Preset::Retry),
        KeyCode::Char('3') => Msg::Preset(Preset::Budget),
        KeyCode::Char('4') => Msg::Preset(Preset::Ownership),
        KeyCode::Char('5') => Msg::Preset(Preset::Finagle),
        KeyCode::Char('6') => Msg::Preset(Preset::Envoy),
        KeyCode::Char('7') => Msg::Preset(Preset::Grpc),
        KeyCode::Char('8') => Msg::Preset(Preset::Aws),
        KeyCode::Char('9') => Msg::Preset(Preset::Aws2026),
        KeyCode::Char('0') => Msg::Preset(Preset::Sre),
        KeyCode::Char('p') => Msg::CyclePreset,
        KeyCode::Char('b') => Msg::ToggleBudget,
        KeyCode::Char('o') => Msg::ToggleOwnership,
        KeyCode::Char('a') => Msg::ToggleAtLeastOnce,
        KeyCode::Char('m') => Msg::CycleAttribution,
        KeyCode::Char('+') | KeyCode::Char('=') => Msg::RateUp,
        KeyCode::Char('-') | KeyCode::Char('_') => Msg::RateDown,
        KeyCode::Char(' ') => Msg::Pause,
        KeyCode::Char('r') => Msg::Reset,
        KeyCode::Char('t') => Msg::ToggleTap,
        KeyCode::Char('v') => Msg::ToggleReplicas,
        KeyCode::Char('u') => Msg::ToggleRoots,
        KeyCode::Char('n') => Msg::NextStep,
        KeyCode::Char('P') => Msg::ToggleHold,
        KeyCode::Enter => Msg::NextChapter,
        KeyCode::Char('/') => Msg::Filter,
        KeyCode::Char('A') => Msg::ToggleAncestry,
        _ => return None,
    })
}

/// The message a key stands for while a filter is typed (after `/`):
/// characters go into the filter, Enter keeps it, Esc clears it, Ctrl-C
/// still quits.
pub fn typing(k: KeyEvent) -> Option<Msg> {
    if k.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    Some(match k.code {
        KeyCode::Char('c') if ctrl => Msg::Quit,
        _ if ctrl => return None,
        KeyCode::Char(c) => Msg::Type(c),
        KeyCode::Backspace => Msg::TypeBack,
        KeyCode::Enter => Msg::TypeDone,
        KeyCode::Esc => Msg::Escape,
        KeyCode::Up => Msg::Up,
        KeyCode::Down => Msg::Down,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn the_keys_users_expect() {
        assert_eq!(msg(key(KeyCode::Char('q'))), Some(Msg::Quit));
        assert_eq!(
            msg(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Msg::Quit)
        );
        assert_eq!(msg(key(KeyCode::Char('c'))), Some(Msg::ToggleContext));
        assert_eq!(msg(key(KeyCode::Char('?'))), Some(Msg::Help));
        assert_eq!(msg(key(KeyCode::Esc)), Some(Msg::Escape));
        assert_eq!(msg(key(KeyCode::Tab)), Some(Msg::FocusNext));
        assert_eq!(msg(key(KeyCode::Char('j'))), Some(Msg::Down));
        assert_eq!(msg(key(KeyCode::Down)), Some(Msg::Down));
        assert_eq!(msg(key(KeyCode::Char('k'))), Some(Msg::Up));
        assert_eq!(msg(key(KeyCode::Up)), Some(Msg::Up));
        assert_eq!(
            msg(key(KeyCode::Char('4'))),
            Some(Msg::Preset(Preset::Ownership))
        );
        assert_eq!(
            msg(key(KeyCode::Char('2'))),
            Some(Msg::Preset(Preset::Retry))
        );
        assert_eq!(msg(key(KeyCode::Char('0'))), Some(Msg::Preset(Preset::Sre)));
        assert_eq!(msg(key(KeyCode::Char(' '))), Some(Msg::Pause));
        assert_eq!(msg(key(KeyCode::Char('E'))), Some(Msg::ErrorUp));
        assert_eq!(msg(key(KeyCode::Char('w'))), Some(Msg::WorkersDown));
        assert_eq!(msg(key(KeyCode::Char('W'))), Some(Msg::WorkersUp));
        assert_eq!(msg(key(KeyCode::Char('l'))), Some(Msg::LatencyUp));
        assert_eq!(msg(key(KeyCode::Char('L'))), Some(Msg::LatencyDown));
        assert_eq!(msg(key(KeyCode::Char('z'))), None);
    }

    #[test]
    fn releases_and_other_control_keys_do_nothing() {
        let mut k = key(KeyCode::Char('q'));
        k.kind = KeyEventKind::Release;
        assert_eq!(msg(k), None);
        assert_eq!(
            msg(KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL)),
            None
        );
    }

    #[test]
    fn a_filter_being_typed_takes_the_letters_and_ctrl_c_still_quits() {
        assert_eq!(msg(key(KeyCode::Char('/'))), Some(Msg::Filter));
        assert_eq!(msg(key(KeyCode::Char('A'))), Some(Msg::ToggleAncestry));
        // `q` and `f` type, they do not quit or inject a fault.
        assert_eq!(typing(key(KeyCode::Char('q'))), Some(Msg::Type('q')));
        assert_eq!(typing(key(KeyCode::Char('f'))), Some(Msg::Type('f')));
        assert_eq!(typing(key(KeyCode::Backspace)), Some(Msg::TypeBack));
        assert_eq!(typing(key(KeyCode::Enter)), Some(Msg::TypeDone));
        assert_eq!(typing(key(KeyCode::Esc)), Some(Msg::Escape));
        assert_eq!(
            typing(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Msg::Quit)
        );
    }

    #[test]
    fn every_help_group_is_named_and_the_footer_keeps_the_essentials() {
        for h in HELP {
            assert!(!h.group.is_empty() && !h.keys.is_empty() && !h.what.is_empty());
        }
        let essentials: Vec<&str> = HELP
            .iter()
            .filter(|h| h.rank == 0)
            .map(|h| h.short)
            .collect();
        assert_eq!(essentials, ["help", "quit"]);
    }
}
