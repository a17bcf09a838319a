use super::*;
use std::path::Path;

fn run_args(argv: &[&str]) -> RunArgs {
    match Opts::try_parse_from(argv).unwrap().into_command() {
        Command::Run(r) => r,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_run_lasts_more_than_nothing() {
    for bad in ["0s", "0", "-1", "-5s"] {
        let e =
            Opts::try_parse_from(["chaoslab", "run", "t.yaml", "--headless", "--duration", bad])
                .unwrap_err()
                .to_string();
        assert!(e.contains("0s") || e.contains("negative"), "{bad}: {e}");
        assert!(!e.contains("unexpected argument"), "{bad}: {e}");
    }
    let w = Opts::try_parse_from(["chaoslab", "run", "t.yaml", "--warmup", "-1s"])
        .unwrap_err()
        .to_string();
    assert!(w.contains("negative"), "{w}");
}

#[test]
fn the_bare_form_is_run_with_every_flag() {
    let r = run_args(&[
        "chaoslab",
        "t.yaml",
        "--policy",
        "retry",
        "--fail",
        "D=0.5",
        "--rps",
        "50",
        "--duration",
        "3s",
        "--seed",
        "7",
    ]);
    assert_eq!(r.topology.as_deref(), Some(Path::new("t.yaml")));
    assert_eq!(r.start.policy.as_deref(), Some("retry"));
    assert_eq!(r.start.fail, ["D=0.5"]);
    assert_eq!((r.load.rps, r.load.seed), (Some(50.0), Some(7)));
    assert_eq!(r.clock.duration, Some(Duration::from_secs(3)));
    let r = run_args(&["chaoslab", "run", "t.yaml", "--headless"]);
    assert!(r.headless);
    assert!(!r.big && r.theme == Theme::Dark, "the full layout, dark");
    assert_eq!(run_args(&["chaoslab"]).topology, None);
}

#[test]
fn the_projector_flags_reach_the_run() {
    let r = run_args(&["chaoslab", "t.yaml", "--big", "--theme", "light"]);
    assert!(r.big && r.theme == Theme::Light);
    let r = run_args(&["chaoslab", "run", "t.yaml", "--theme", "dark"]);
    assert_eq!(r.theme, Theme::Dark);
    let e = Opts::try_parse_from(["chaoslab", "t.yaml", "--theme", "sepia"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("`sepia` is not a theme (dark, light)"), "{e}");
}

#[test]
fn the_shared_flags_mean_the_same_in_every_command() {
    let o = Opts::try_parse_from([
        "chaoslab", "serve", "t.yaml", "--policy", "budget", "--fail", "B",
    ]);
    match o.unwrap().into_command() {
        Command::Serve(s) => {
            assert_eq!(s.start.policy.as_deref(), Some("budget"));
            assert_eq!(s.start.fail, ["B"]);
        }
        other => panic!("{other:?}"),
    }
    let o = Opts::try_parse_from([
        "chaoslab", "compare", "t.yaml", "--rps", "10", "--warmup", "1s",
    ]);
    match o.unwrap().into_command() {
        Command::Compare(c) => {
            assert_eq!(c.runs.load.rps, Some(10.0));
            assert_eq!(c.runs.clock.warmup, Some(Duration::from_secs(1)));
        }
        other => panic!("{other:?}"),
    }
}
