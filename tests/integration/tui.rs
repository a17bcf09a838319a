//! The dashboard end to end: the real binary in a real terminal (tmux),
//! driven by keys, read back from the screen.
//!
//! uber-chain under naive retries: D's amplification must reach about 8×
//! (1, 2, 4, 8 down the chain); selecting D and pressing `4` (ownership)
//! must bring it down to about 1.1×; `x` must take D down; `q` must leave
//! the normal screen behind with the summary printed, and the report
//! written.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use tokio::time::Instant;

use crate::common;

static SERVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A private tmux server with one 160×45 session, killed on drop (also
/// when an assertion fails).
pub(crate) struct Tmux {
    socket: String,
    session: &'static str,
}

impl Tmux {
    pub(crate) fn start() -> Tmux {
        let found = Command::new("tmux").arg("-V").output();
        assert!(
            found.as_ref().is_ok_and(|o| o.status.success()),
            "tmux is not installed, and the dashboard's end-to-end test drives the real \
             binary in tmux: install it (`apt-get install tmux`), or run scripts/test, \
             which installs it"
        );
        let t = Tmux {
            // A server of its own per test: a killed one may still be
            // going away when the next test starts.
            socket: format!(
                "chaoslab-test-{}-{}",
                std::process::id(),
                SERVERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ),
            session: "tui",
        };
        let o = t.tmux(&[
            "new-session",
            "-d",
            "-x",
            "160",
            "-y",
            "45",
            "-s",
            t.session,
            "env -u NO_COLOR PS1='test$ ' bash --norc --noprofile",
        ]);
        assert!(o.status.success(), "tmux new-session: {o:?}");
        t.wait_for("the shell", Duration::from_secs(10), |s| {
            s.contains("test$")
        });
        t
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("run tmux")
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", self.session];
        args.extend_from_slice(keys);
        let o = self.tmux(&args);
        assert!(o.status.success(), "tmux send-keys: {o:?}");
    }

    pub(crate) fn screen(&self) -> String {
        String::from_utf8_lossy(
            &self
                .tmux(&["capture-pane", "-p", "-t", self.session])
                .stdout,
        )
        .into_owned()
    }

    /// The screen and the lines scrolled off above it (the normal
    /// screen's history: a summary of several phases is taller than the
    /// pane).
    pub(crate) fn scrollback(&self) -> String {
        String::from_utf8_lossy(
            &self
                .tmux(&["capture-pane", "-p", "-S", "-", "-t", self.session])
                .stdout,
        )
        .into_owned()
    }

    fn alternate_on(&self) -> String {
        String::from_utf8_lossy(
            &self
                .tmux(&["display", "-p", "-t", self.session, "#{alternate_on}"])
                .stdout,
        )
        .trim()
        .to_string()
    }

    /// Polls the screen until `ok` holds, or fails after `limit` with the
    /// last screen shown.
    pub(crate) fn wait_for(
        &self,
        what: &str,
        limit: Duration,
        ok: impl Fn(&str) -> bool,
    ) -> String {
        // The last screen read once `limit` has passed, to show it.
        let start = Instant::now();
        let (s, held) = common::wait_until(limit + Duration::from_secs(1), what, || {
            let s = self.screen();
            let held = ok(&s);
            (held || start.elapsed() >= limit).then_some((s, held))
        });
        assert!(held, "waited {limit:?} for {what}; the screen:\n{s}");
        s
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// A service's row in the dashboard's table: (selected, fields after the
/// state glyph: name, depth, rps, amp, model, err%, ...).
fn row(screen: &str, name: &str) -> Option<(bool, Vec<String>)> {
    screen.lines().find_map(|l| {
        let l = l.trim_start_matches('│');
        let selected = l.starts_with('▶');
        let fields: Vec<String> = l
            .trim_start_matches('▶')
            .trim_end_matches('│')
            .split_whitespace()
            .map(str::to_string)
            .collect();
        // glyph, name, depth, rps, amp, model
        (fields.len() > 6 && fields[1] == name && fields[4].trim_end_matches('*').ends_with('×'))
            .then(|| (selected, fields[1..].to_vec()))
    })
}

fn amp(screen: &str, name: &str) -> Option<f64> {
    row(screen, name)?
        .1
        .get(3)?
        .trim_end_matches(['×', '*'])
        .parse()
        .ok()
}

fn near(screen: &str, name: &str, want: f64, tolerance: f64) -> bool {
    amp(screen, name).is_some_and(|a| (a / want - 1.0).abs() <= tolerance)
}

#[test]
fn storm_then_ownership_in_a_real_terminal() {
    let _fleet = common::fleet_lock();
    let topology = common::root().join("topologies/uber-chain.yaml");
    assert!(
        topology.exists(),
        "{} is missing (SPEC section 3's example)",
        topology.display()
    );
    let dir = std::env::temp_dir().join(format!("chaoslab-tui-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report: PathBuf = dir.join("report.json");
    let _ = std::fs::remove_file(&report);
    let recording: PathBuf = dir.join("session.yaml");
    let _ = std::fs::remove_file(&recording);

    let t = Tmux::start();
    let cmd = format!(
        "{} {} --policy retry --report {} --record {}",
        env!("CARGO_BIN_EXE_chaoslab"),
        topology.display(),
        report.display(),
        recording.display()
    );
    t.keys(&[&cmd, "Enter"]);

    // The storm: 1, 2, 4, 8 down the chain.
    // All three on one screen: the rates are windows, and on a shared
    // machine the first seconds' windows can hold D's 8× while B's and
    // C's are still filling (CI read B at 1.90× at 0:03, twice).
    let s = t.wait_for(
        "B, C and D at about 2×, 4× and 8× under retry",
        Duration::from_secs(30),
        |s| near(s, "B", 2.0, 0.05) && near(s, "C", 4.0, 0.05) && near(s, "D", 8.0, 0.05),
    );
    assert!(s.contains("RETRY"), "{s}");
    assert_eq!(
        t.alternate_on(),
        "1",
        "the dashboard uses the alternate screen"
    );

    // Select D: the entry is selected first; three rows down.
    t.keys(&["j", "j", "j"]);
    t.wait_for("D selected", Duration::from_secs(5), |s| {
        row(s, "D").is_some_and(|(sel, _)| sel)
    });

    // Ownership: only C retries D, within the budget.
    t.keys(&["4"]);
    let s = t.wait_for(
        "D at about 1.1× under ownership",
        Duration::from_secs(20),
        |s| near(s, "D", 1.1, 0.05) && s.contains("OWNERSHIP"),
    );
    assert!(near(&s, "B", 1.0, 0.05) && near(&s, "C", 1.0, 0.05), "{s}");
    assert!(
        s.contains("policy ownership"),
        "the event log shows the switch:\n{s}"
    );

    // Inject a fault on the selected service: down.
    t.keys(&["x"]);
    t.wait_for("D down", Duration::from_secs(10), |s| {
        s.contains("D down (connection refused)")
            && row(s, "D").is_some_and(|(_, f)| f.iter().any(|x| x == "down"))
    });

    // Quit: the normal screen again, with the summary.
    t.keys(&["q"]);
    t.wait_for(
        "the summary on the normal screen",
        Duration::from_secs(15),
        |s| s.trim_end().ends_with("test$"),
    );
    let s = t.scrollback();
    assert!(s.contains("chaoslab dashboard closed"), "{s}");
    assert!(s.contains("storm radius:"), "{s}");
    // A table per phase (how many were long enough to measure depends on
    // the test's pace), ownership's among them.
    assert!(s.contains("uber-chain · policy ownership (R=2"), "{s}");
    assert_eq!(t.alternate_on(), "0", "the alternate screen is left:\n{s}");
    let json = std::fs::read_to_string(&report).expect("the report is written on quit");
    assert!(json.contains("\"topology\": \"uber-chain\""), "{json}");
    assert!(json.contains("\"phases\": ["), "{json}");

    // The session, recorded, replays headless as a scenario: it starts
    // from naive retries (the flag given to the dashboard, not to the
    // replay), switches to ownership and takes D down at the recorded times.
    drop(t);
    let yaml = std::fs::read_to_string(&recording).expect("the session is recorded on quit");
    assert!(yaml.contains("policy: ownership"), "{yaml}");
    assert!(
        yaml.contains("down: true") || yaml.contains("down: D"),
        "{yaml}"
    );
    let replay_report = dir.join("replay.json");
    let out = common::chaoslab(&[
        "run",
        topology.to_str().unwrap(),
        "--headless",
        "--scenario",
        recording.to_str().unwrap(),
        "--report",
        replay_report.to_str().unwrap(),
    ]);
    let (stdout, stderr) = common::text(&out);
    assert!(
        out.status.success(),
        "replay failed:\n{stdout}\n{stderr}\n{yaml}"
    );
    let replay: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&replay_report).unwrap()).unwrap();
    assert_eq!(
        replay["policy"], "ownership",
        "the replay ends where the session did"
    );
    let retried = replay["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "B")
        .map(|n| n["retries_sent"].as_u64().unwrap())
        .unwrap();
    assert!(
        retried > 0,
        "the replay began under naive retries: B retried"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The story played in the dashboard: each caption on the banner at its
/// time, `P` holds the timeline and `n` plays the next cue at once, the
/// expectations turn ✓ as their windows close, and the verdict shows.
#[test]
fn the_story_plays_in_the_dashboard_with_its_captions_and_verdict() {
    let _fleet = common::fleet_lock();
    let t = Tmux::start();
    let cmd = format!(
        "{} {} --scenario {}",
        env!("CARGO_BIN_EXE_chaoslab"),
        common::root().join("topologies/uber-chain.yaml").display(),
        common::root()
            .join("scenarios/uber-chain-story.yaml")
            .display(),
    );
    t.keys(&[&cmd, "Enter"]);
    // The timeline's clock as the strip shows it: `▶   12.3s`.
    let clock = |s: &str| -> Option<f64> {
        let l = s
            .lines()
            .find(|l| l.contains(" step ") && l.contains("n next"))?;
        let after = l.split_once('▶').or_else(|| l.split_once("HELD"))?.1;
        after
            .split_whitespace()
            .next()?
            .trim_end_matches('s')
            .parse()
            .ok()
    };
    // (caption, its time on the timeline: warm-up 2 s + `at`)
    let captions = [
        ("A healthy chain of seven", 0.0),
        ("D fails every request", 6.0),
        ("A retry budget caps retries", 10.0),
        ("Capped, not confined", 11.0),
        ("Error ownership. D claims", 14.0),
        ("C loses its request context", 18.0),
        ("D heals. Every service", 22.0),
    ];
    for (i, (words, at)) in captions.iter().enumerate() {
        let s = t.wait_for(words, Duration::from_secs(12), |s| s.contains(words));
        let now = clock(&s).unwrap_or_else(|| panic!("no strip:\n{s}"));
        assert!(
            now >= at - 0.01,
            "`{words}` at {now} s, before its time {at} s:\n{s}"
        );
        if i == 1 {
            assert!(
                s.contains("✓"),
                "the healthy window's expectations turned ✓:\n{s}"
            );
            // Hold, where the next caption is four seconds away: the
            // timeline's clock stops and the caption stays.
            t.keys(&["P"]);
            let held = t.wait_for("HELD", Duration::from_secs(3), |s| s.contains("⏸ HELD"));
            // The clock must stand still over this 1.5 s: the pause is
            // the experiment.
            std::thread::sleep(Duration::from_millis(1500));
            let s = t.screen();
            assert_eq!(clock(&s), clock(&held), "held:\n{s}");
            assert!(s.contains(words), "{s}");
            t.keys(&["P"]);
        }
        if i == 2 {
            // `n` while held: the next cue (a second on, and no window
            // between) plays now; only `n` can show it while held.
            t.keys(&["P"]);
            let held = t.wait_for("HELD", Duration::from_secs(3), |s| s.contains("⏸ HELD"));
            assert!(
                !held.contains("Capped, not confined"),
                "the hold landed after the next cue:\n{held}"
            );
            t.keys(&["n"]);
            t.wait_for("the next caption, held", Duration::from_millis(1500), |s| {
                s.contains("Capped, not confined") && s.contains("⏸ HELD")
            });
            t.keys(&["P"]);
        }
    }
    let s = t.wait_for("the verdict", Duration::from_secs(15), |s| {
        s.contains("PASS  all 23 expectations held") || s.contains("FAIL ")
    });
    assert!(s.contains("PASS  all 23 expectations held"), "{s}");
    assert!(s.contains("✓23 ✗0"), "{s}");
    assert!(
        s.contains("▸ policy ownership"),
        "scripted steps are marked:\n{s}"
    );
    t.keys(&["q"]);
    t.wait_for("the shell", Duration::from_secs(10), |s| {
        s.trim_end().ends_with("test$")
    });
}

/// The dashboard over `--processes`: the keys reach every node, and
/// quitting leaves no node running.
#[test]
fn the_dashboard_drives_node_processes_and_leaves_none() {
    let _fleet = common::fleet_lock();
    crate::processes::assert_no_node_left(Duration::ZERO, "before the test");
    let t = Tmux::start();
    let cast = fresh_cast("tui");
    let cmd = format!(
        "{} {} --processes --fail D --policy retry --cast {}",
        env!("CARGO_BIN_EXE_chaoslab"),
        common::root().join("topologies/uber-chain.yaml").display(),
        cast.display(),
    );
    t.keys(&[&cmd, "Enter"]);
    let s = t.wait_for("D at about 8× under retry", Duration::from_secs(25), |s| {
        near(s, "D", 8.0, 0.05)
    });
    assert!(near(&s, "B", 2.0, 0.05) && near(&s, "C", 4.0, 0.05), "{s}");
    assert_eq!(crate::processes::nodes_alive().len(), 7, "{s}");
    // Ownership, by key: every node takes it.
    t.keys(&["4"]);
    t.wait_for(
        "D at about 1.1× under ownership",
        Duration::from_secs(20),
        |s| near(s, "D", 1.1, 0.05) && near(s, "B", 1.0, 0.05) && s.contains("OWNERSHIP"),
    );
    t.keys(&["q"]);
    t.wait_for("the summary and the shell", Duration::from_secs(10), |s| {
        s.contains("test$") && t.alternate_on() == "0"
    });
    crate::processes::assert_no_node_left(Duration::from_secs(1), "after q");

    let (header, shown, frames, last) = read_cast(&cast);
    assert_eq!(
        (header["width"].as_u64(), header["height"].as_u64()),
        (Some(160), Some(45))
    );
    assert!(frames >= 8, "{frames} frames");
    assert!(last > 1.0, "the cast spans the session: {last} s");
    assert!(shown.contains("uber-chain") && shown.contains("OWNERSHIP"));
}

/// A path for a test's cast, with no file there yet.
fn fresh_cast(name: &str) -> std::path::PathBuf {
    let cast = std::env::temp_dir().join(format!("chaoslab-{name}-{}.cast", std::process::id()));
    let _ = std::fs::remove_file(&cast);
    cast
}

/// An asciicast v2 file, checked line by line and removed: its header,
/// the text its events drew, how many there were and the last one's time.
fn read_cast(path: &std::path::Path) -> (serde_json::Value, String, usize, f64) {
    let text = std::fs::read_to_string(path).expect("the cast is written on quit");
    let _ = std::fs::remove_file(path);
    let mut lines = text.lines();
    let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(header["version"], 2, "{header}");
    let mut last = 0.0;
    let mut shown = String::new();
    let mut frames = 0;
    for l in lines {
        let e: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        let t = e[0].as_f64().unwrap_or_else(|| panic!("a time: {l}"));
        assert!(t >= last, "times go forward: {last} then {t}");
        last = t;
        assert!(e[1] == "o" || e[1] == "r", "{l}");
        shown.push_str(e[2].as_str().expect("the data as text"));
        frames += 1;
    }
    (header, shown, frames, last)
}

/// The tour as a person takes it: a chapter plays with its caption,
/// Enter opens the next one before the first has ended, `q` leaves and
/// prints how each chapter went, and `--cast` records both chapters in
/// one file.
#[test]
fn the_tour_goes_on_with_enter_and_records_both_chapters() {
    let _fleet = common::fleet_lock();
    let t = Tmux::start();
    let cast = fresh_cast("tour");
    let cmd = format!(
        "{} tour 6 --cast {}",
        env!("CARGO_BIN_EXE_chaoslab"),
        cast.display()
    );
    t.keys(&[&cmd, "Enter"]);
    let s = t.wait_for("chapter 6 with a caption", Duration::from_secs(15), |s| {
        s.contains("» p = 0.1. The budget covers")
    });
    assert!(!s.contains("PASS"), "the chapter has not ended yet:\n{s}");
    assert!(
        s.contains("Enter next chapter"),
        "the strip says Enter:\n{s}"
    );
    t.keys(&["Enter"]);
    t.wait_for("chapter 7", Duration::from_secs(15), |s| {
        s.contains("metastable") && s.contains("» DB is 75% busy")
    });
    t.keys(&["q"]);
    let s = t.wait_for("the shell", Duration::from_secs(10), |s| {
        s.contains("test$") && s.contains("chapter 7 of 8") && t.alternate_on() == "0"
    });
    assert!(s.contains("chapter 6 of 8: What a budget leaves"), "{s}");
    let (header, shown, frames, _) = read_cast(&cast);
    assert_eq!(header["title"], "chaoslab tour", "{header}");
    assert!(frames >= 8, "{frames} frames");
    assert!(
        shown.contains("p = 0.1. The budget covers") && shown.contains("DB is 75% busy"),
        "both chapters' captions are in the cast"
    );
}

#[test]
fn at_the_machines_limit_the_dashboard_stays_responsive() {
    let _fleet = common::fleet_lock();
    let dir = std::env::temp_dir().join(format!("chaoslab-tui-limit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ended = dir.join("ended");
    let t = Tmux::start();
    // Naive retries on the uber-chain at 4,000 rps ask D..G for 32,000
    // requests a second each: far past two cores.
    let cmd = format!(
        "{} {} --policy retry --rps 4000; date +%s%N > {}",
        env!("CARGO_BIN_EXE_chaoslab"),
        common::root().join("topologies/uber-chain.yaml").display(),
        ended.display()
    );
    t.keys(&[&cmd, "Enter"]);
    t.wait_for("the saturation banner", Duration::from_secs(20), |s| {
        s.contains("SATURATED") && s.contains("figures are lower bounds")
    });
    // Redraws: the figures change with every snapshot (4 a second), so a
    // dashboard that keeps up shows a new screen each time. Read the
    // screen every 50 ms for 5 s and count the different ones: at least
    // 12. The run loop's ticks slip on a machine this loaded (a late tick
    // delays the ones after it, by design), up to 100 ms each: 5 s ÷
    // 350 ms is 14, less a tenth for the window's edges and the sampling.
    // A dashboard that stopped drawing shows a handful.
    let (mut screens, mut last) = (0, String::new());
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        let s = t.screen();
        if s != last {
            screens += 1;
            last = s;
        }
        // The sampling pace the count is judged by: the experiment.
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        screens >= 12,
        "{screens} different screens in 5 s: the dashboard missed snapshots\n{last}"
    );
    // `q` gives the terminal back, and the process ends, within a second
    // (plus what starting `tmux send-keys` took on this loaded machine).
    let pressed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let sending = Instant::now();
    t.keys(&["q"]);
    let sent_in = sending.elapsed();
    let s = t.wait_for("the summary", Duration::from_secs(15), |s| {
        s.contains("chaoslab dashboard closed") && s.trim_end().ends_with("test$")
    });
    let ns: u128 = std::fs::read_to_string(&ended)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let took = Duration::from_nanos((ns - pressed.as_nanos()) as u64);
    eprintln!("at the limit: {screens} screens in 5 s, `q` ended the process in {took:?}");
    assert!(
        took < Duration::from_secs(1) + 2 * sent_in,
        "`q` took {took:?} to end the process (send-keys {sent_in:?})\n{s}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
