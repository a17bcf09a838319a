//! The README's example of both halves is what a person copies: it is the
//! runnable example (`examples/chain`), and pasted into a fresh project
//! outside this repository, against the crates as `cargo package` packs
//! them, it builds and shows ownership on the wire. That build is also the
//! check that each packed crate builds on its own (what `cargo package`
//! verifies). It uses both `tower-error-ownership` and this crate, so it
//! lives here, in the crate that depends on the other.

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The heading of the README's section with the example of both halves.
const EXAMPLE_SECTION: &str = "\n## Both halves: two services\n";

/// The first Rust block of the README's section `EXAMPLE_SECTION`.
fn readme_example() -> String {
    let readme = std::fs::read_to_string(crate_dir().join("README.md")).unwrap();
    let section = readme
        .find(EXAMPLE_SECTION)
        .expect("the README has a section with the example of both halves");
    let readme = &readme[section..];
    let start = readme
        .find("```rust,no_run\n")
        .expect("the section holds an example");
    let body = &readme[start + "```rust,no_run\n".len()..];
    body[..body.find("```").unwrap()].to_owned()
}

#[test]
fn the_readme_example_is_the_runnable_example_and_fits_40_lines() {
    let example = std::fs::read_to_string(crate_dir().join("examples/chain/main.rs")).unwrap();
    assert_eq!(
        readme_example(),
        example,
        "README.md and examples/chain/main.rs differ"
    );
    let lines = example.lines().count();
    assert!(lines <= 40, "the example is {lines} lines");
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The three crates as `cargo package` packs them for crates.io,
/// unpacked into `dir`: what a person downloads. Their manifests name
/// each other by version only, as published crates do.
fn packaged(dir: &Path) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = dir.join("package-target");
    run(Command::new(&cargo)
        .args(["package", "--no-verify", "--allow-dirty", "-q"])
        .args(["-p", "error-ownership", "-p", "tower-error-ownership"])
        .args(["-p", "reqwest-error-ownership", "--target-dir"])
        .arg(&target)
        .current_dir(crate_dir()));
    let unpacked = dir.join("crates");
    std::fs::create_dir_all(&unpacked).unwrap();
    for name in CRATES {
        let file = target.join(format!("package/{name}-0.1.0.crate"));
        run(Command::new("tar")
            .arg("xzf")
            .arg(&file)
            .arg("-C")
            .arg(&unpacked));
    }
    unpacked
}

/// The crates a person adds.
const CRATES: [&str; 3] = [
    "error-ownership",
    "tower-error-ownership",
    "reqwest-error-ownership",
];

/// A new project outside the repository, as `cargo new` makes it, with the
/// README's example as its `main.rs`, the dependencies the README names,
/// and the packaged crates by path (they are not on crates.io yet, so the
/// ones they name by version are patched in).
fn new_project(dir: &Path) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run(Command::new(&cargo)
        .args(["new", "--quiet", "--bin", "shop"])
        .current_dir(dir));
    let crates = packaged(dir);
    let path = |name: &str| crates.join(format!("{name}-0.1.0")).display().to_string();
    let manifest = dir.join("shop/Cargo.toml");
    let mut toml = std::fs::read_to_string(&manifest).unwrap();
    toml.push_str(&format!(
        r#"axum = "0.8"
reqwest = {{ version = "0.13", default-features = false }}
reqwest-middleware = "0.5"
tokio = {{ version = "1", features = ["full"] }}
tower-error-ownership = {{ path = "{tower}" }}
reqwest-error-ownership = {{ path = "{reqwest}" }}

[patch.crates-io]
error-ownership = {{ path = "{rules}" }}
tower-error-ownership = {{ path = "{tower}" }}
"#,
        tower = path("tower-error-ownership"),
        reqwest = path("reqwest-error-ownership"),
        rules = path("error-ownership"),
    ));
    std::fs::write(&manifest, toml).unwrap();
    std::fs::write(dir.join("shop/src/main.rs"), readme_example()).unwrap();
    // The versions this repository was tested with.
    let lock = crate_dir().join("../../Cargo.lock");
    std::fs::copy(lock, dir.join("shop/Cargo.lock")).unwrap();
}

#[test]
fn the_readme_example_pasted_into_a_new_project_shows_one_hop_retrying() {
    let dir = std::env::temp_dir().join(format!("adoption-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    new_project(&dir);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // Its own target directory, kept between runs: the first build is the
    // one a person makes.
    let target = crate_dir().join("../../target/adoption");
    // The build takes both cores for half a minute: at the lowest
    // priority, in a session of its own (its own scheduling group), so
    // that the fleets of the tests beside it keep their CPU.
    let script = r#"echo 19 > /proc/self/autogroup 2>/dev/null; exec nice -n 19 "$@""#;
    let out = run(Command::new("setsid")
        .args(["-w", "sh", "-c", script, "sh"])
        .arg(cargo)
        .args(["run", "--quiet"])
        .env("CARGO_TARGET_DIR", target)
        .env_remove("RUSTFLAGS")
        // A build to run once, not to debug: no debug info, no incremental
        // cache.
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_INCREMENTAL", "0")
        .current_dir(dir.join("shop")));
    let _ = std::fs::remove_dir_all(&dir);
    let lines: Vec<&str> = out.lines().collect();
    // One hop up from the failure: disowned, and not retried (checkout saw
    // one attempt). The hop right above it retried once (payments saw two).
    assert_eq!(
        lines.first().copied(),
        Some(r#"checkout: 502 Bad Gateway x-error-claim: "false" (seen: [1, 2])"#),
        "{out}"
    );
    // The failing service's own answer: claimed.
    assert!(
        lines.get(1).is_some_and(
            |l| l.starts_with("payments: 500") && l.contains(r#"x-error-claim: "true""#)
        ),
        "{out}"
    );
}
