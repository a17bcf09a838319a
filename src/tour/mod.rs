//! `chaoslab tour`: the post's figures, one chapter each, live. A chapter
//! is a shipped topology and a captioned scenario, both built into the
//! binary (a `cargo install`ed chaoslab has them); the person reads the
//! captions, watches the figure appear in the dashboard, and presses
//! Enter for the next chapter or `q` to leave. `--headless` runs every
//! chapter and prints its text, its captions and its measured figures: a
//! printed lesson, which exits 1 when a chapter's expectations fail.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{write_output, RunError};
use crate::options::run::DEFAULT_DURATION;
use crate::options::{Prepared, Run};
use crate::report::Report;
use crate::scenario::Scenario;
use crate::session::{Session, Setup};
use crate::signals::Interrupts;
use crate::theme::Theme;
use crate::topology::Topology;
use crate::tui::{self, Ended};

/// One chapter: a figure of the post.
#[derive(Debug, Clone, Copy)]
pub struct Chapter {
    /// Its title.
    pub title: &'static str,
    /// The file names it exports as.
    pub slug: &'static str,
    /// The topology's file name in `topologies/`, and its text.
    pub topology: (&'static str, &'static str),
    /// The scenario's text (its `description:` is the chapter's text).
    pub scenario: &'static str,
}

macro_rules! chapter {
    // A chapter whose scenario is its own, in chapters/.
    ($title:literal, $slug:literal, $topology:literal) => {
        chapter!(@ $title, $slug, $topology, concat!("chapters/", $slug, ".yaml"))
    };
    // A chapter that plays a scenario the repository ships in scenarios/.
    ($title:literal, $slug:literal, $topology:literal, $scenario:literal) => {
        chapter!(@ $title, $slug, $topology, concat!("../../scenarios/", $scenario))
    };
    (@ $title:literal, $slug:literal, $topology:literal, $scenario:expr) => {
        Chapter {
            title: $title,
            slug: $slug,
            topology: (
                $topology,
                include_str!(concat!("../../topologies/", $topology)),
            ),
            scenario: include_str!($scenario),
        }
    };
}

/// Every chapter, in order.
pub const CHAPTERS: [Chapter; 8] = [
    chapter!(
        "The storm, and two answers to it",
        "1-storm",
        "uber-chain.yaml"
    ),
    chapter!(
        "Claim and unclaim, hop by hop",
        "2-claims",
        "three-node.yaml"
    ),
    chapter!("A dropped context", "3-context", "context-drop.yaml"),
    chapter!("Coincidental errors", "4-coincidental", "coincidental.yaml"),
    chapter!(
        "At least one retry",
        "5-at-least-once",
        "at-least-once.yaml"
    ),
    chapter!(
        "What a budget leaves of availability",
        "6-availability",
        "availability.yaml"
    ),
    chapter!(
        "A storm that outlives its trigger",
        "7-metastable",
        "metastable.yaml"
    ),
    chapter!(
        "18 November 2025: the incident on a mesh of 2,500 services",
        "8-incident",
        "uber-incident.yaml",
        "uber-incident.yaml"
    ),
];

impl Chapter {
    /// Its topology and scenario, parsed.
    pub fn load(&self) -> Result<(Topology, Scenario), RunError> {
        let t = Topology::from_yaml(self.topology.1, self.topology.0)?;
        let origin = format!("tour/{}.yaml", self.slug);
        let s = Scenario::from_yaml(self.scenario, &origin, &t).map_err(RunError::input)?;
        Ok((t, s))
    }

    /// Its text: the scenario's description.
    pub fn text(&self) -> String {
        self.load()
            .ok()
            .and_then(|(_, s)| s.description)
            .unwrap_or_default()
    }
}

/// What `chaoslab tour` is asked to play, list or export.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The chapter to start at and, if given, the last to play
    /// (numbered from 1); `None` plays them all.
    pub chapter: Option<(usize, Option<usize>)>,
    /// List the chapters.
    pub list: bool,
    /// Run every chapter without the dashboard, printing each one's
    /// text, captions and measured figures.
    pub headless: bool,
    /// Write the chapters' topologies and scenarios into this folder.
    pub export: Option<PathBuf>,
    /// Dashboard frames per second.
    pub fps: u32,
    /// No colours.
    pub no_color: bool,
    /// The layout for a projector.
    pub big: bool,
    /// Colours for a dark or a light background.
    pub theme: Theme,
    /// Record the chapters played as one asciicast v2 file.
    pub cast: Option<PathBuf>,
    /// Each chapter over this many shard processes.
    pub shards: Option<usize>,
}

/// `chaoslab tour`.
pub fn run(args: Options) -> Result<(), RunError> {
    if args.list {
        for (i, c) in CHAPTERS.iter().enumerate() {
            println!("{:>2}. {}  ({})", i + 1, c.title, c.topology.0);
        }
        return Ok(());
    }
    if let Some(dir) = &args.export {
        return export(dir);
    }
    let (first, last) = args.chapter.unwrap_or((1, None));
    if let Some(n) = [first]
        .into_iter()
        .chain(last)
        .find(|&n| n > CHAPTERS.len())
    {
        return Err(RunError::Usage(format!(
            "tour {n}: there are chapters 1 to {} (chaoslab tour --list)",
            CHAPTERS.len()
        )));
    }
    let last = last.unwrap_or(CHAPTERS.len());
    let chapters = (first - 1)..last;
    if let Some(path) = &args.cast {
        crate::error::check_outputs(&[("--cast", path.as_path())], &[])?;
    }
    if args.headless {
        return headless(chapters, args.shards);
    }
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(RunError::Usage(
            "the tour needs a terminal; for scripts and CI run `chaoslab tour --headless`".into(),
        ));
    }
    let cast = args
        .cast
        .as_deref()
        .map(|p| tui::cast::Cast::open(p, "chaoslab tour"))
        .transpose()?;
    for (i, c) in CHAPTERS
        .iter()
        .enumerate()
        .take(chapters.end)
        .skip(chapters.start)
    {
        let (t, scenario) = c.load()?;
        let run = Run {
            fps: args.fps,
            no_color: args.no_color,
            ..Run::default()
        };
        let Prepared {
            setup,
            expectations,
            end,
            warmup,
        } = run.prepare(t, Some(&scenario), false)?;
        let (file, shards) = over_shards(c, args.shards)?;
        let session = Session::start(Setup {
            processes: file.as_ref().map(|f| f.path().to_path_buf()),
            shards,
            ..setup
        })?;
        let lab = crate::dashboard::lab(&session);
        let verdicts = tui::play::judge(&lab, expectations, warmup);
        let opts = tui::Options {
            fps: args.fps,
            no_color: args.no_color,
            listening: vec![],
            cast: cast.clone(),
            scenario: end.map(|e| (e, verdicts.clone())),
            tour: true,
            big: args.big,
            theme: args.theme,
        };
        let ended = tui::dashboard(&lab, &opts);
        drop(lab);
        session.finish()?;
        let judged = verdicts.now();
        let held = judged.iter().filter(|j| j.passed == Some(true)).count();
        println!(
            "chapter {} of {}: {} · {held} of {} expectations held",
            i + 1,
            CHAPTERS.len(),
            c.title,
            judged.len()
        );
        match ended? {
            Ended::Next => continue,
            Ended::Quit => break,
        }
    }
    Ok(())
}

/// The `chapters` (indices), headless: each one's text, its captions as
/// they pass, its table and its expectations.
/// With `--shards N`, the chapter's topology in a file for the shards to
/// read (the chapters are built into the program), and its shards: N, or
/// one a service for a chapter of fewer services.
fn over_shards(
    c: &Chapter,
    shards: Option<usize>,
) -> Result<(Option<crate::session::shards::TopologyFile>, Option<usize>), RunError> {
    let Some(n) = shards else {
        return Ok((None, None));
    };
    let (t, _) = c.load()?;
    let services = (0..t.services.len())
        .filter(|&i| t.services[i].group == i)
        .count();
    let file = crate::session::shards::TopologyFile::write(c.topology.1, c.slug).map_err(|e| {
        RunError::Usage(format!("writing chapter `{}` for the shards: {e}", c.slug))
    })?;
    Ok((Some(file), Some(n.min(services))))
}

fn headless(chapters: std::ops::Range<usize>, shards: Option<usize>) -> Result<(), RunError> {
    let interrupts = Interrupts::watch();
    let mut failed = vec![];
    for (i, c) in CHAPTERS
        .iter()
        .enumerate()
        .take(chapters.end)
        .skip(chapters.start)
    {
        let (t, scenario) = c.load()?;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "\n=== Chapter {} of {}: {} ===",
            i + 1,
            CHAPTERS.len(),
            c.title
        );
        let _ = writeln!(out, "{}\n", wrap(&c.text(), 76));
        let _ = out.flush();
        drop(out);
        let warmup = scenario.warmup.unwrap_or(Duration::from_secs(2));
        let duration = scenario.duration.unwrap_or(DEFAULT_DURATION);
        let (file, shards) = over_shards(c, shards)?;
        let session = Session::start(Setup {
            processes: file.as_ref().map(|f| f.path().to_path_buf()),
            shards,
            initial: scenario.initial_actions(),
            steps: scenario.plan_steps(warmup),
            captions: scenario.plan_captions(warmup),
            warmup,
            until: Some(warmup + duration),
            ..Setup::new(t)
        })?;
        interrupts.attach(session.stopper());
        let mut snaps = session.snapshots();
        session.block_on(async {
            let mut said = None;
            while snaps.changed().await.is_ok() {
                let s = snaps.borrow_and_update().clone();
                if let Some(say) = s.new_caption(&mut said) {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "  [{:>4.1}s] » {say}", s.t.as_secs_f64());
                    let _ = out.flush();
                }
            }
        });
        let record = session.wait()?;
        let report = Report::of_run(&record, &scenario.expectations);
        print!("\n{}", report.table());
        if report.expectations.iter().any(|e| !e.passed) {
            failed.push(format!("chapter {} ({})", i + 1, c.title));
        }
        interrupts.outcome()?;
    }
    if failed.is_empty() {
        println!("\nEvery chapter's expectations held.");
        Ok(())
    } else {
        Err(RunError::ExpectationFailed(format!(
            "expectations failed in {}",
            failed.join(", ")
        )))
    }
}

/// Writes each chapter's topology and scenario into `dir`, to edit and
/// run: `chaoslab run DIR/1-storm.topology.yaml --scenario DIR/1-storm.scenario.yaml`.
fn export(dir: &Path) -> Result<(), RunError> {
    if dir.is_file() {
        return Err(RunError::Usage(format!(
            "--export {}: is a file; give a folder (it is created if missing)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|source| RunError::Output {
        what: "tour folder",
        path: dir.to_path_buf(),
        source,
    })?;
    for c in &CHAPTERS {
        let t = dir.join(format!("{}.topology.yaml", c.slug));
        let s = dir.join(format!("{}.scenario.yaml", c.slug));
        write_output(&t, c.topology.1, "chapter topology")?;
        write_output(&s, c.scenario, "chapter scenario")?;
        println!(
            "chaoslab run {} --scenario {}    # {}",
            t.display(),
            s.display(),
            c.title
        );
    }
    Ok(())
}

/// `text` in lines of at most `w` columns.
fn wrap(text: &str, w: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        let n = word.chars().count();
        if line > 0 && line + 1 + n > w {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_chapter_loads_and_fits_its_duration() {
        for c in &CHAPTERS {
            let (_, s) = c.load().unwrap_or_else(|e| panic!("{}: {e}", c.slug));
            assert!(!c.text().is_empty(), "{}", c.slug);
            assert!(!s.captions.is_empty(), "{} has captions", c.slug);
            assert!(!s.expectations.is_empty(), "{} checks its figure", c.slug);
            // A figure of the post in seconds; the incident needs two of
            // the budgets' 10 s TTLs under budgets and two under ownership.
            let d = s.duration.unwrap() + s.warmup.unwrap();
            let most = if c.slug == "8-incident" { 65 } else { 15 };
            assert!(d <= Duration::from_secs(most), "{}: {d:?}", c.slug);
        }
    }
}
