//! The dashboard's colour themes by name: `--theme dark|light`. The
//! command line reads the name, the dashboard renders it
//! ([`crate::view::theme`]).

/// How the frame's colours are rendered: `--theme`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Theme {
    /// The 16 ANSI colours on the terminal's own background.
    #[default]
    Dark,
    /// Dark shades on a light page of the dashboard's own, for
    /// projectors and light terminals.
    Light,
}

impl Theme {
    /// Every theme, as `--theme` names them.
    pub const ALL: [Theme; 2] = [Theme::Dark, Theme::Light];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Theme::Dark => "dark",
            Theme::Light => "light",
        }
    }
}
