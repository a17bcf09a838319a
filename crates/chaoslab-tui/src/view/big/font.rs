//! A 3×5 block font for the figures the back of the room must read.
//! ratatui has no big-text widget, so each glyph is five rows of pixels
//! at most three wide, drawn two pixel rows to a terminal row with `█`,
//! `▀` and `▄`: three terminal rows tall, the last row's lower half
//! empty, which leaves a line of air under every figure.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

/// Terminal rows a line of big text takes.
pub const HEIGHT: u16 = 3;

/// Columns between two glyphs.
const GAP: u16 = 1;

/// A glyph's pixel rows, `#` on; every row as wide as the glyph.
fn glyph(c: char) -> Option<[&'static str; 5]> {
    Some(match c.to_ascii_uppercase() {
        '0' => ["###", "# #", "# #", "# #", "###"],
        '1' => [" # ", "## ", " # ", " # ", "###"],
        '2' => ["## ", "  #", " # ", "#  ", "###"],
        '3' => ["## ", "  #", " # ", "  #", "## "],
        '4' => ["# #", "# #", "###", "  #", "  #"],
        '5' => ["###", "#  ", "## ", "  #", "## "],
        '6' => [" ##", "#  ", "###", "# #", "###"],
        '7' => ["###", "  #", "  #", " # ", " # "],
        '8' => ["###", "# #", "###", "# #", "###"],
        '9' => ["###", "# #", "###", "  #", "## "],
        '.' => [" ", " ", " ", " ", "#"],
        '×' => ["   ", "# #", " # ", "# #", "   "],
        '–' | '-' => ["   ", "   ", "###", "   ", "   "],
        '%' => ["# #", "  #", " # ", "#  ", "# #"],
        '+' => ["   ", " # ", "###", " # ", "   "],
        ' ' => ["  ", "  ", "  ", "  ", "  "],
        'A' => [" # ", "# #", "###", "# #", "# #"],
        'B' => ["## ", "# #", "## ", "# #", "## "],
        'C' => [" ##", "#  ", "#  ", "#  ", " ##"],
        'D' => ["## ", "# #", "# #", "# #", "## "],
        'E' => ["###", "#  ", "## ", "#  ", "###"],
        'F' => ["###", "#  ", "## ", "#  ", "#  "],
        'G' => [" ##", "#  ", "# #", "# #", " ##"],
        'H' => ["# #", "# #", "###", "# #", "# #"],
        'I' => ["###", " # ", " # ", " # ", "###"],
        'J' => ["  #", "  #", "  #", "# #", " # "],
        'K' => ["# #", "# #", "## ", "# #", "# #"],
        'L' => ["#  ", "#  ", "#  ", "#  ", "###"],
        'M' => ["# #", "###", "###", "# #", "# #"],
        'N' => ["## ", "# #", "# #", "# #", "# #"],
        'O' => [" # ", "# #", "# #", "# #", " # "],
        'P' => ["## ", "# #", "## ", "#  ", "#  "],
        'Q' => [" # ", "# #", "# #", "## ", " ##"],
        'R' => ["## ", "# #", "## ", "# #", "# #"],
        'S' => [" ##", "#  ", " # ", "  #", "## "],
        'T' => ["###", " # ", " # ", " # ", " # "],
        'U' => ["# #", "# #", "# #", "# #", "###"],
        'V' => ["# #", "# #", "# #", "# #", " # "],
        'W' => ["# #", "# #", "###", "###", "# #"],
        'X' => ["# #", "# #", " # ", "# #", "# #"],
        'Y' => ["# #", "# #", " # ", " # ", " # "],
        'Z' => ["###", "  #", " # ", "#  ", "###"],
        _ => return None,
    })
}

/// Columns `text` takes in big glyphs, or `None` if some character has
/// no glyph (the caller then writes it small).
pub fn width(text: &str) -> Option<u16> {
    let mut w = 0u16;
    for c in text.chars() {
        w += glyph(c)?[0].len() as u16 + GAP;
    }
    Some(w.saturating_sub(GAP))
}

/// The three terminal rows of `text` in big glyphs (characters without
/// one are left out; see [`width`]).
pub fn rows(text: &str) -> [String; 3] {
    let mut out = [String::new(), String::new(), String::new()];
    for (i, g) in text.chars().filter_map(glyph).enumerate() {
        for (r, line) in out.iter_mut().enumerate() {
            if i > 0 {
                line.push(' ');
            }
            let top = g[2 * r].as_bytes();
            let bottom = g.get(2 * r + 1).map_or(&[][..], |b| b.as_bytes());
            for (k, &t) in top.iter().enumerate() {
                let b = bottom.get(k).copied().unwrap_or(b' ');
                line.push(match (t == b'#', b == b'#') {
                    (true, true) => '█',
                    (true, false) => '▀',
                    (false, true) => '▄',
                    (false, false) => ' ',
                });
            }
        }
    }
    out
}

/// Writes `text` in big glyphs with its top left at (`x`, `y`), only
/// into the cells inside `clip`; blank pixels keep the cell's style.
pub fn draw(buf: &mut Buffer, x: u16, y: u16, text: &str, style: Style, clip: Rect) {
    let clip = clip.intersection(buf.area);
    for (r, line) in rows(text).iter().enumerate() {
        let cy = y.saturating_add(r as u16);
        for (k, ch) in line.chars().enumerate() {
            let cx = x.saturating_add(k as u16);
            if ch == ' ' || !clip.contains((cx, cy).into()) {
                continue;
            }
            if let Some(cell) = buf.cell_mut((cx, cy)) {
                cell.set_char(ch).set_style(style);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glyphs_are_three_rows_of_half_blocks() {
        assert_eq!(rows("8"), ["█▀█", "█▀█", "▀▀▀"]);
        assert_eq!(rows("0"), ["█▀█", "█ █", "▀▀▀"]);
        assert_eq!(rows("8.0"), ["█▀█   █▀█", "█▀█   █ █", "▀▀▀ ▀ ▀▀▀"]);
    }

    #[test]
    fn every_glyph_row_is_as_wide_as_the_glyph() {
        for c in "0123456789.×–%+ABCDEFGHIJKLMNOPQRSTUVWXYZ ".chars() {
            let g = glyph(c).expect("a glyph");
            assert!(g.iter().all(|r| r.len() == g[0].len()), "{c}");
        }
    }

    #[test]
    fn widths_count_the_gaps_and_refuse_what_has_no_glyph() {
        assert_eq!(width("8.00×"), Some(17));
        assert_eq!(width("D"), Some(3));
        assert_eq!(width("S25"), Some(11));
        assert_eq!(width("d"), Some(3), "lower case is drawn as upper case");
        assert_eq!(width("shard_2"), None);
        for t in ["8.00×", "12.3×", "123×", "12k×", "–", "RETRY"] {
            let w = width(t).expect("a glyph for each character") as usize;
            assert!(rows(t).iter().all(|r| r.chars().count() == w), "{t}");
        }
    }
}
