//! The generated parts of the documentation: blocks of `docs/` that the
//! code writes (the command reference, the preset table, the metrics
//! table) are checked against what the code prints now, so a chapter
//! cannot drift from the program it describes.

/// Checks that the block named `name` in `file` (a path from the
/// repository's root) holds `content`: the text between
/// `<!-- NAME: generated ... -->` and `<!-- end of NAME -->`. With
/// `CHAOSLAB_BLESS` set it rewrites the block instead.
pub fn check_block(file: &str, name: &str, content: &str) {
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let begin = format!("<!-- {name}: generated");
    let end = format!("<!-- end of {name} -->");
    let (Some(b), Some(e)) = (text.find(&begin), text.find(&end)) else {
        panic!("{file} has no block between `{begin} ... -->` and `{end}`");
    };
    let b = b + text[b..].find("-->\n").expect("the opening marker ends") + "-->\n".len();
    if text[b..e] == *content {
        return;
    }
    if std::env::var_os("CHAOSLAB_BLESS").is_some() {
        let updated = format!("{}{content}{}", &text[..b], &text[e..]);
        std::fs::write(&path, updated).unwrap();
    } else {
        panic!(
            "the {name} block of {file} is not what the code prints: run CHAOSLAB_BLESS=1 cargo test --workspace --lib docs_ and commit the result"
        );
    }
}
