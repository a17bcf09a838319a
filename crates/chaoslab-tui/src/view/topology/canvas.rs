//! The topology view's drawing surface: a grid of line bits and text,
//! turned into box-drawing characters when it is copied to the screen, so
//! crossing and joining edges get the right corner glyphs.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

const UP: u8 = 1;
const DOWN: u8 = 2;
const LEFT: u8 = 4;
const RIGHT: u8 = 8;

#[derive(Debug, Clone, Default)]
struct CanvasCell {
    bits: u8,
    text: Option<char>,
    style: Style,
}

/// A grid of line bits and text, turned into box-drawing characters.
pub(super) struct Canvas {
    w: u16,
    h: u16,
    cells: Vec<CanvasCell>,
}

impl Canvas {
    pub(super) fn new(w: u16, h: u16) -> Canvas {
        Canvas {
            w,
            h,
            cells: vec![CanvasCell::default(); w as usize * h as usize],
        }
    }

    fn cell(&mut self, x: u16, y: u16) -> Option<&mut CanvasCell> {
        (x < self.w && y < self.h)
            .then(|| &mut self.cells[y as usize * self.w as usize + x as usize])
    }

    pub(super) fn h(&mut self, y: u16, x0: u16, x1: u16, style: Style) {
        let (a, b) = (x0.min(x1), x0.max(x1));
        for x in a..=b {
            if let Some(c) = self.cell(x, y) {
                if x > a || a == b {
                    c.bits |= LEFT;
                }
                if x < b || a == b {
                    c.bits |= RIGHT;
                }
                c.style = style;
            }
        }
    }

    pub(super) fn v(&mut self, x: u16, y0: u16, y1: u16, style: Style) {
        let (a, b) = (y0.min(y1), y0.max(y1));
        for y in a..=b {
            if let Some(c) = self.cell(x, y) {
                if y > a {
                    c.bits |= UP;
                }
                if y < b {
                    c.bits |= DOWN;
                }
                c.style = style;
            }
        }
    }

    pub(super) fn text(&mut self, x: u16, y: u16, s: &str, style: Style) {
        for (i, ch) in s.chars().enumerate() {
            if let Some(c) = self.cell(x + i as u16, y) {
                c.text = Some(ch);
                c.style = style;
            }
        }
    }

    pub(super) fn blit(&self, buf: &mut Buffer, area: Rect, scroll: u16) {
        for row in 0..area.height {
            let y = row + scroll;
            if y >= self.h {
                break;
            }
            for x in 0..area.width.min(self.w) {
                let c = &self.cells[y as usize * self.w as usize + x as usize];
                let ch = match c.text {
                    Some(t) => t,
                    None => match box_char(c.bits) {
                        Some(b) => b,
                        None => continue,
                    },
                };
                let mut tmp = [0u8; 4];
                if let Some(cell) = buf.cell_mut((area.x + x, area.y + row)) {
                    cell.set_symbol(ch.encode_utf8(&mut tmp));
                    cell.set_style(c.style);
                }
            }
        }
    }
}

fn box_char(bits: u8) -> Option<char> {
    Some(match bits {
        0 => return None,
        b if b == LEFT || b == RIGHT || b == LEFT | RIGHT => '─',
        b if b == UP || b == DOWN || b == UP | DOWN => '│',
        b if b == DOWN | RIGHT => '┌',
        b if b == DOWN | LEFT => '┐',
        b if b == UP | RIGHT => '└',
        b if b == UP | LEFT => '┘',
        b if b == UP | DOWN | RIGHT => '├',
        b if b == UP | DOWN | LEFT => '┤',
        b if b == LEFT | RIGHT | DOWN => '┬',
        b if b == LEFT | RIGHT | UP => '┴',
        _ => '┼',
    })
}
