//! The crate stays pure: what it depends on at run time (`cargo tree -e
//! normal`) holds no runtime, no HTTP and no client, so it can sit under
//! any stack.

use std::process::Command;

#[test]
fn no_runtime_no_http_no_client_among_its_dependencies() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "-p", "error-ownership", "-e", "normal", "--offline"])
        .args(["--prefix", "none", "--format", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{tree}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names.first(), Some(&"error-ownership"), "{tree}");
    for banned in [
        "tokio", "http", "hyper", "axum", "reqwest", "tower", "tonic",
    ] {
        assert!(!names.contains(&banned), "{banned} in:\n{tree}");
    }
}
