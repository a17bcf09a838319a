//! The documentation holds together: the README fits on a screen and
//! every relative link in it and in `docs/` leads to a file that exists,
//! and to a heading of that file where the link names one. (The blocks the
//! code generates are checked by the `docs_` unit tests.)

use std::path::PathBuf;

use crate::common::root;

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces
/// as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = vec![];
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// Every `[text](target)` of a Markdown file outside code blocks and code
/// spans, with its line.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = vec![];
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans hold examples, not links.
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = prose.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((n + 1, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    out
}

fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![
        root().join("README.md"),
        root().join("topologies/README.md"),
        root().join("crates/error-ownership/README.md"),
        root().join("crates/tower-error-ownership/README.md"),
        root().join("crates/reqwest-error-ownership/README.md"),
    ];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("a docs/ folder")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

#[test]
fn the_readme_fits_on_a_screen_and_every_link_resolves() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 300, "README.md has {lines} lines: at most 300");
    let mut broken = vec![];
    let mut checked = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let here = file.parent().unwrap();
        for (line, target) in links(&text) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest: PathBuf = if path.is_empty() {
                file.clone()
            } else {
                here.join(path)
            };
            let name = file
                .strip_prefix(root())
                .unwrap_or(&file)
                .display()
                .to_string();
            if !dest.exists() {
                broken.push(format!("{name}:{line}: {target}: no such file"));
                continue;
            }
            if let Some(a) = anchor {
                let ok = dest.extension().is_some_and(|e| e == "md")
                    && anchors(&std::fs::read_to_string(&dest).unwrap())
                        .iter()
                        .any(|h| h == a);
                if !ok {
                    broken.push(format!("{name}:{line}: {target}: no heading #{a}"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    // The README links into every chapter, and there are chapters to link.
    let chapters: Vec<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    assert!(chapters.len() >= 10, "{chapters:?}");
    assert!(checked > 50, "only {checked} links checked");
    let index = std::fs::read_to_string(root().join("docs/README.md")).unwrap();
    for c in chapters.iter().filter(|c| *c != "README.md") {
        assert!(
            index.contains(&format!("({c}")),
            "docs/README.md does not list {c}"
        );
    }
}

#[test]
fn a_link_check_that_cannot_fail_is_no_check() {
    // The parts of the check, on text made to break them.
    assert_eq!(
        slug("Uber's three tables, measured"),
        "ubers-three-tables-measured"
    );
    assert_eq!(slug("`--big`: on a projector"), "--big-on-a-projector");
    let text = "# Top\n\n[a](b.md#top) `[c](d.md)`\n```\n[e](f.md)\n```\n";
    assert_eq!(links(text), vec![(3, "b.md#top".to_string())]);
    assert_eq!(anchors(text), vec!["top".to_string()]);
}
