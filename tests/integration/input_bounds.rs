//! Any input up to 1 MB is answered, whatever its shape: accepted, or
//! refused with exit status 2 and a message that says where, never a
//! panic, and never slowly. Each shape that once took seconds or minutes
//! (a long chain, deep nesting, a wide fan-out, a long name, an alias
//! bomb, a layered DAG) runs through the real binary under a generous
//! deadline; how fast it really is, `benches/model_scale.rs` measures.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use chaoslab::topology::{generate, Topology};
use tokio::time::Instant;

use crate::common::{wait_until, Killed};

/// Far above the 1 s each takes in a release build, to stay clear of a
/// busy machine; a regression to quadratic time takes minutes.
const DEADLINE: Duration = Duration::from_secs(20);

/// The most an input may hold.
const MB: usize = 1 << 20;

struct Answer {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Writes `yaml` to a temp file and runs `chaoslab ARGS FILE`; fails the
/// test if it has not answered by [`DEADLINE`], or panicked.
fn run(label: &str, args: &[&str], yaml: &str) -> (Answer, String) {
    assert!(yaml.len() <= MB, "{label}: {} bytes", yaml.len());
    let dir = std::env::temp_dir();
    let tag = format!("chaoslab-{}-{label}", std::process::id());
    let file: PathBuf = dir.join(format!("{tag}.yaml"));
    let (out, err) = (
        dir.join(format!("{tag}.out")),
        dir.join(format!("{tag}.err")),
    );
    std::fs::write(&file, yaml).unwrap();
    let path = file.to_str().unwrap().to_string();
    // Killed when dropped: also when the deadline passes.
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_chaoslab"))
            .args(args)
            .arg(&path)
            .env_remove("RUST_BACKTRACE")
            .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
            .stderr(Stdio::from(std::fs::File::create(&err).unwrap()))
            .spawn()
            .unwrap(),
    );
    let status = wait_until(
        DEADLINE,
        &format!("{label}: `chaoslab {args:?}` to exit"),
        || child.0.try_wait().unwrap(),
    );
    let answer = Answer {
        code: status.code(),
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
    };
    for f in [&file, &out, &err] {
        let _ = std::fs::remove_file(f);
    }
    assert!(
        !answer.stderr.contains("panicked"),
        "{label}: {}",
        answer.stderr
    );
    (answer, path)
}

/// `check` and `model` both accept `yaml`; returns check's output.
fn accepted(label: &str, yaml: &str) -> String {
    let (model, _) = run(label, &["model"], yaml);
    assert_eq!(model.code, Some(0), "{label}: model: {}", model.stderr);
    let (check, _) = run(label, &["check"], yaml);
    assert_eq!(check.code, Some(0), "{label}: check: {}", check.stderr);
    check.stdout
}

/// `check` refuses `yaml` with exit status 2, at `at` (`:line:col: `),
/// saying `what`.
fn refused(label: &str, yaml: &str, at: &str, what: &str) {
    let (a, path) = run(label, &["check"], yaml);
    assert_eq!(a.code, Some(2), "{label}: {}{}", a.stdout, a.stderr);
    let first = a.stderr.lines().next().unwrap_or("");
    assert!(
        first.starts_with(&format!("chaoslab: {path}{at}")) && first.contains(what),
        "{label}: want `{path}{at}` and `{what}`, got: {}",
        &first[..first.len().min(400)]
    );
}

#[test]
fn a_long_chain_is_answered() {
    let yaml = generate::chain(32_000, "{ preset: ownership }");
    let out = accepted("chain", &yaml);
    assert!(
        out.contains("retry      31999 (when S31999 fails)"),
        "{out}"
    );
    assert!(out.contains("ownership  1 (when S1 fails)"), "{out}");
}

#[test]
fn a_layered_dag_of_100_by_100_is_answered() {
    let yaml = generate::layered(100, 100, "{ preset: ownership }");
    let out = accepted("layered", &yaml);
    assert!(out.contains("retry      100 (when L99_0 fails)"), "{out}");
}

#[test]
fn deep_nesting_is_refused_where_it_goes_too_deep() {
    let n = MB / 2 - 100;
    let calls = format!(
        "name: t\nservices:\n  A: {{ calls: {}{} }}\n",
        "[".repeat(n),
        "]".repeat(n)
    );
    refused("nest", &calls, ":3:78: ", "nested more than 64 deep");
    let scenario = format!(
        "name: t\nservices:\n  A: {{}}\nscenario: {}1{}\n",
        "{a: ".repeat(MB / 6),
        "}".repeat(MB / 6)
    );
    refused(
        "nest-map",
        &scenario,
        ":4:267: ",
        "nested more than 64 deep",
    );
    // Block nesting is the deserializer's to refuse: at once, as well.
    let dashes = format!(
        "name: t\nservices:\n  A: {{}}\nscenario:\n  {}x\n",
        "- ".repeat(MB / 3)
    );
    let (a, _) = run("dashes", &["check"], &dashes);
    assert_eq!(a.code, Some(2), "{}", a.stderr);
}

#[test]
fn a_wide_fan_out_is_answered() {
    let n = 45_000;
    let names: Vec<String> = (0..n).map(|i| format!("B{i}")).collect();
    let mut yaml = format!(
        "name: fan\nservices:\n  A: {{ calls: [{}] }}\n",
        names.join(", ")
    );
    for b in &names {
        yaml += &format!("  {b}: {{}}\n");
    }
    let out = accepted("fan", &yaml);
    let a = out
        .lines()
        .find(|l| l.starts_with("    0  A "))
        .expect("A's row");
    assert!(a.len() > 65_535, "one cell of {} characters", a.len());
    // The long cell does not widen every other row.
    let b = out
        .lines()
        .find(|l| l.starts_with("    1  B7 "))
        .expect("B7's row");
    assert!(b.len() < 400, "{}", b.len());
}

#[test]
fn long_names_are_answered() {
    let name = "x".repeat(MB / 2 - 100);
    // Longer than 1024 characters, a key must be written `? name`.
    let yaml =
        format!("name: t\nservices:\n  A: {{ calls: [\"{name}\"] }}\n  ? {name}\n  : {{}}\n");
    let out = accepted("long-name", &yaml);
    assert!(
        out.contains("retry      1"),
        "{}",
        &out[..out.len().min(2000)]
    );
    let yaml =
        format!("name: t\nservices:\n  A: {{ calls: [\"{name}\"] }}\n  ? {name}z\n  : {{}}\n");
    refused(
        "long-name-typo",
        &yaml,
        ":3:17: ",
        "which is not in the topology",
    );
}

#[test]
fn an_alias_bomb_is_refused_at_its_first_alias() {
    let list: Vec<String> = (0..600).map(|i| format!("B{i}")).collect();
    let mut yaml = format!(
        "name: bomb\nload: {{ entry: A }}\nservices:\n  A: {{ calls: &L [{}] }}\n",
        list.join(", ")
    );
    for i in 0..3300 {
        yaml += &format!("  C{i}: {{ calls: *L }}\n");
    }
    for b in &list {
        yaml += &format!("  {b}: {{}}\n");
    }
    assert!(yaml.len() < 100_000, "{}", yaml.len());
    refused(
        "bomb",
        &yaml,
        ":5:16: ",
        "aliases expand this file to more than 500000 values",
    );
    // Aliases within the limit are YAML as usual.
    let few = "name: t\nservices:\n  A: { calls: &L [B, C] }\n  D: { calls: *L }\n  B: {}\n  C: {}\nload: { entry: A }\n";
    let t = Topology::from_yaml(few, "few.yaml").unwrap();
    assert_eq!(
        t.service_id("D").map(|d| t.services[d].calls.len()),
        Some(2)
    );
}

#[test]
fn a_scenario_is_held_to_the_same_bounds() {
    let t = Topology::from_yaml("name: t\nservices:\n  A: {}\n", "t.yaml").unwrap();
    let deep = format!(
        "steps: {}{}\n",
        "[".repeat(MB / 2 - 10),
        "]".repeat(MB / 2 - 10)
    );
    let started = Instant::now();
    let e = chaoslab::scenario::Scenario::from_yaml(&deep, "s.yaml", &t).unwrap_err();
    assert!(e.to_string().starts_with("s.yaml:1:72: "), "{e}");
    // Many aliases of one long list (a few nested ones are the parser's
    // own to refuse: it allows a hundred jumps per event).
    let list = vec!["x"; 1000].join(", ");
    let aliases = vec!["*a"; 1000].join(", ");
    let bomb = format!("a: &a [{list}]\nb: [{aliases}]\n");
    let e = chaoslab::scenario::Scenario::from_yaml(&bomb, "s.yaml", &t).unwrap_err();
    assert!(e.to_string().starts_with("s.yaml:2:5: "), "{e}");
    assert!(e.to_string().contains("aliases expand"), "{e}");
    assert!(started.elapsed() < DEADLINE, "{:?}", started.elapsed());
}
