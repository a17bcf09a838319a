//! Colours and glyphs. Every state has a glyph as well as a colour, so
//! the screen still reads with `--no-color`, `NO_COLOR`, or a
//! colour-blind viewer. Colours are the 16 ANSI ones, which terminals
//! adapt to their dark or light theme; text on a coloured background is
//! black or white, chosen for contrast with that background.
//!
//! A projector washes out a dark page and a terminal's own light theme
//! often leaves yellow on white unreadable, so `--theme light` repaints
//! the drawn frame on a light page of its own ([`Theme::paint`]): each of
//! the 16 ANSI names the panels use becomes a fixed dark shade of itself
//! from the 256-colour palette (yellow turns brown, white text black, the
//! dim grey of labels a firm darker grey). The panels keep naming colours
//! by meaning; the theme only decides how those names are rendered, so
//! every panel, chart and pill follows it and none needs to know.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

use crate::lab::snapshot::ServiceState;
use crate::topology::Policy;

pub use crate::theme::Theme;

/// The light page.
const PAPER: Color = Color::Indexed(255);
/// The light theme's default text.
const INK: Color = Color::Indexed(234);
/// The light theme's labels, where the dark theme dims the text.
const PENCIL: Color = Color::Indexed(240);

impl Theme {
    /// Renders the colours of a drawn `area` in this theme. The dark
    /// theme leaves them as drawn; the light one gives every cell the
    /// light page (or a light-page shade of its fill), dark text, and a
    /// grey in place of the dim attribute, which a light page would fade.
    pub fn paint(self, buf: &mut Buffer, area: Rect) {
        if self == Theme::Dark {
            return;
        }
        let area = area.intersection(buf.area);
        for y in area.top()..area.bottom() {
            for x in area.left()..area.right() {
                let Some(c) = buf.cell_mut((x, y)) else {
                    continue;
                };
                let filled = c.bg != Color::Reset;
                let dim = c.modifier.contains(Modifier::DIM);
                c.fg = match c.fg {
                    Color::Reset if dim => PENCIL,
                    Color::Reset => INK,
                    fg if filled => on_fill(fg),
                    fg => on_paper(fg),
                };
                c.bg = if filled { fill(c.bg) } else { PAPER };
                c.modifier.remove(Modifier::DIM);
            }
        }
    }
}

/// An ANSI colour as text on the light page: a shade dark enough to read
/// from the back of a room.
fn on_paper(c: Color) -> Color {
    match c {
        Color::Black | Color::White => INK,
        Color::Red | Color::LightRed => Color::Indexed(124),
        Color::Green | Color::LightGreen => Color::Indexed(28),
        Color::Yellow | Color::LightYellow => Color::Indexed(94),
        Color::Blue | Color::LightBlue => Color::Indexed(25),
        Color::Magenta | Color::LightMagenta => Color::Indexed(90),
        Color::Cyan | Color::LightCyan => Color::Indexed(30),
        Color::Gray => Color::Indexed(238),
        Color::DarkGray => PENCIL,
        other => other,
    }
}

/// An ANSI colour as a fill (a pill's background) on the light page.
fn fill(c: Color) -> Color {
    match c {
        Color::Black => INK,
        Color::White | Color::Gray => Color::Indexed(250),
        Color::Red | Color::LightRed => Color::Indexed(160),
        Color::Green | Color::LightGreen => Color::Indexed(40),
        Color::Yellow | Color::LightYellow => Color::Indexed(220),
        Color::Blue | Color::LightBlue => Color::Indexed(25),
        Color::Magenta | Color::LightMagenta => Color::Indexed(127),
        Color::Cyan | Color::LightCyan => Color::Indexed(44),
        Color::DarkGray => PENCIL,
        other => other,
    }
}

/// Text on a fill: black and white stay black and white (the pills chose
/// them for contrast with their fill), other colours as on the page.
fn on_fill(c: Color) -> Color {
    match c {
        Color::Black => Color::Indexed(16),
        Color::White => Color::Indexed(231),
        other => on_paper(other),
    }
}

/// The glyph that marks a state.
pub fn glyph(s: ServiceState) -> &'static str {
    match s {
        ServiceState::Healthy => "✓",
        ServiceState::Owner => "✗",
        ServiceState::Propagating => "↑",
        ServiceState::ContextDropped => "⊘",
        ServiceState::Down => "▼",
        ServiceState::Shedding => "≋",
        ServiceState::Idle => "·",
    }
}

/// What a state means, for the legend.
pub fn meaning(s: ServiceState) -> &'static str {
    match s {
        ServiceState::Healthy => "healthy",
        ServiceState::Owner => "failing, claims its errors",
        ServiceState::Propagating => "passes unclaimed errors up",
        ServiceState::ContextDropped => "context dropped",
        ServiceState::Down => "down",
        ServiceState::Shedding => "shedding over capacity",
        ServiceState::Idle => "idle",
    }
}

/// Every state, in legend order.
pub const STATES: [ServiceState; 7] = [
    ServiceState::Healthy,
    ServiceState::Owner,
    ServiceState::Propagating,
    ServiceState::ContextDropped,
    ServiceState::Down,
    ServiceState::Shedding,
    ServiceState::Idle,
];

/// A service's pill in the topology view.
pub fn pill(s: ServiceState) -> Style {
    let (bg, fg) = match s {
        ServiceState::Healthy => (Color::Green, Color::Black),
        ServiceState::Owner => (Color::Red, Color::White),
        ServiceState::Propagating => (Color::Yellow, Color::Black),
        ServiceState::ContextDropped => (Color::Magenta, Color::White),
        ServiceState::Down => (Color::DarkGray, Color::White),
        ServiceState::Shedding => (Color::Cyan, Color::Black),
        ServiceState::Idle => return Style::new().add_modifier(Modifier::DIM),
    };
    Style::new().bg(bg).fg(fg)
}

/// A state's colour as text on the terminal's own background.
pub fn text(s: ServiceState) -> Style {
    let c = match s {
        ServiceState::Healthy => Color::Green,
        ServiceState::Owner => Color::Red,
        ServiceState::Propagating => Color::Yellow,
        ServiceState::ContextDropped => Color::Magenta,
        ServiceState::Down => Color::DarkGray,
        ServiceState::Shedding => Color::Cyan,
        ServiceState::Idle => return Style::new().add_modifier(Modifier::DIM),
    };
    Style::new().fg(c)
}

/// The policy's name, coloured by how dangerous the mode is.
pub fn policy(p: &Policy) -> Style {
    let c = match (p.mode.retries, p.mode.budget_on, p.mode.ownership) {
        (false, _, _) => Color::Blue,
        (true, false, false) => Color::Red,
        (true, true, false) => Color::Yellow,
        (true, _, true) => Color::Green,
    };
    Style::new()
        .fg(c)
        .add_modifier(Modifier::BOLD | Modifier::REVERSED)
}

/// Labels ("policy", "entry", ...).
pub fn label() -> Style {
    Style::new().add_modifier(Modifier::DIM)
}

/// Figures.
pub fn figure() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

/// Something going wrong (retries on the wire, a low availability).
pub fn alarm() -> Style {
    Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
}

/// Something worth a look (a disagreement with the model).
pub fn warn() -> Style {
    Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
}

/// Something good.
pub fn good() -> Style {
    Style::new().fg(Color::Green).add_modifier(Modifier::BOLD)
}

/// A panel's border: brighter when it has focus.
pub fn border(focused: bool) -> Style {
    if focused {
        Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
    } else {
        Style::new().fg(Color::DarkGray)
    }
}

/// The selected row or node.
pub fn selected() -> Style {
    Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
}

/// Availability's colour: green at three nines, yellow at two, red below.
pub fn availability(a: f64) -> Style {
    if a.is_nan() {
        label()
    } else if a >= 0.999 {
        good()
    } else if a >= 0.99 {
        warn()
    } else {
        alarm()
    }
}
