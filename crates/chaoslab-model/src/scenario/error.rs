//! Why a scenario is refused, and where: [`ScenarioError`], and the
//! `Locator` that finds the line of an entry for errors found after
//! parsing.

use crate::lab::figures::{Figure, Scope};
use crate::yaml::{self, Lines, Location};

/// Why a scenario was refused. Every message names the file, and the line
/// and column where they are known.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: cannot read the scenario: {source}")]
    Read {
        /// The path as given.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Nothing in it.
    #[error("{file}: the scenario is empty: it needs `steps:`, `expect:` or both")]
    Empty {
        /// The file.
        file: String,
    },
    /// Anything found while parsing: YAML syntax, unknown keys, wrong
    /// types, bad durations, inverted windows, unknown figures, bounds
    /// without numbers.
    #[error("{at}: {message}")]
    Yaml {
        /// Where.
        at: Location,
        /// What is wrong, with the YAML path.
        message: String,
    },
    /// A step or an expectation names a service the topology lacks.
    #[error("{at}: {what}: there is no service \"{service}\" in topology {known}")]
    UnknownService {
        /// The service's name in the file.
        at: Location,
        /// The entry (`steps[2].fail`, `expect[0]`).
        what: String,
        /// The name given.
        service: String,
        /// `chain (services: A, B, C)`: the topology and what it has.
        known: String,
    },
    /// A `set:` step the service cannot take: it runs outside the fleet,
    /// or it has no workers to change.
    #[error("{at}: {what}: service \"{service}\" {why}")]
    CannotSet {
        /// The key it cannot take, or the service's name.
        at: Location,
        /// The entry (`steps[2].set`).
        what: String,
        /// The service.
        service: String,
        /// Why, and what to do instead.
        why: String,
    },
    /// An expectation names a figure there is no such thing as.
    #[error(
        "{at}: {what}: unknown figure `{figure}`{hint}; per-service figures (with `service:`) are {}; fleet figures are {}",
        Figure::list(Scope::Service),
        Figure::list(Scope::Fleet)
    )]
    UnknownFigure {
        /// The figure's key.
        at: Location,
        /// The entry (`expect[0]`).
        what: String,
        /// The name given.
        figure: String,
        /// A "did you mean" note, or empty.
        hint: String,
    },
    /// A per-service figure without `service:`.
    #[error("{at}: {what}: `{figure}` is a per-service figure: say which service with `service:`")]
    FigureNeedsService {
        /// The figure's key.
        at: Location,
        /// The entry.
        what: String,
        /// The figure.
        figure: String,
    },
    /// A fleet figure with `service:`.
    #[error("{at}: {what}: `{figure}` is a fleet figure: it takes no `service:` (here `{service}`); put it in an expectation of its own")]
    FleetFigureWithService {
        /// The figure's key.
        at: Location,
        /// The entry.
        what: String,
        /// The figure.
        figure: String,
        /// The service given.
        service: String,
    },
    /// A step or a window ends after the run does.
    #[error("{at}: {what} is after the end of the run: the duration is {duration}{set_by}")]
    AfterDuration {
        /// The step's `at:` or the window's `during:`.
        at: Location,
        /// `steps[3]: the step at 35s`, `expect[1]: the window 25s..35s`.
        what: String,
        /// The run's duration.
        duration: String,
        /// ` (set by --duration)` or empty.
        set_by: String,
    },
}

impl From<yaml::Error> for ScenarioError {
    fn from(e: yaml::Error) -> Self {
        ScenarioError::Yaml {
            at: e.at,
            message: e.message,
        }
    }
}

/// Finds lines in the text for errors found after parsing: the entries of
/// the block sequences `steps:` and `expect:`, at the top of the file or
/// under a top-level key (`scenario:` in a topology). Flow style falls back
/// to the section's line, or the file.
pub(super) struct Locator<'a> {
    pub(super) text: Lines<'a>,
    /// `(section, its key's line, first line of each item, end line)`.
    sections: Vec<(&'static str, usize, Vec<usize>, usize)>,
}

impl<'a> Locator<'a> {
    pub(super) fn new(text: &'a str, file: &'a str, under: Option<&str>) -> Locator<'a> {
        let text = Lines::new(text, file);
        // The scope: the whole file, or the block under a top-level key.
        let scope = match under {
            None => 0..text.len(),
            Some(key) => text
                .find_key(0..text.len(), key)
                .map_or(0..0, |k| text.block(k)),
        };
        let sections = ["steps", "expect"]
            .into_iter()
            .filter_map(|name| {
                let k = text.find_key(scope.clone(), name)?;
                let block = text.block(k);
                let items = text
                    .entries(block.clone())
                    .into_iter()
                    .filter(|&i| text.is_item(i))
                    .collect();
                Some((name, k, items, block.end))
            })
            .collect();
        Locator { text, sections }
    }

    /// `token` in item `i` of `section`; the item's line if the token is
    /// not found; the section's line, or the file, in flow style.
    pub(super) fn token_in_item(&self, section: &str, i: usize, token: &str) -> Location {
        let Some((_, k, items, end)) = self.sections.iter().find(|s| s.0 == section) else {
            return self.text.whole_file();
        };
        let Some(&first) = items.get(i) else {
            return self.text.at(*k, self.text.indent(*k));
        };
        let last = items.get(i + 1).copied().unwrap_or(*end);
        self.text
            .find(first..last.max(first + 1), token, 0)
            .unwrap_or_else(|| self.text.at(first, self.text.indent(first)))
    }
}
