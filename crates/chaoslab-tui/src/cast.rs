//! `--cast FILE`: the dashboard session as an asciicast v2 recording,
//! which asciinema's players replay (`asciinema play FILE`, the web
//! player).
//!
//! The dashboard draws through [`Screen`], which writes to the terminal
//! and, when casting, appends what each frame wrote to the file as one
//! event: a header line (`{"version": 2, "width": …, "height": …}`), then
//! one JSON array per frame, `[seconds, "o", "bytes as text"]`, and
//! `[seconds, "r", "COLSxROWS"]` when the terminal is resized. Events go
//! to the file as they happen, so memory stays a frame's worth whatever
//! the session's length; the file grows with the session (about one
//! frame's changes per snapshot).

use std::fs::File;
use std::io::{self, BufWriter, Stdout, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::time::Instant;

use crate::Error;

/// The terminal the dashboard draws on, recorded when casting.
#[derive(Debug)]
pub struct Screen {
    out: Stdout,
    cast: Option<Shared>,
}

/// A cast the screen writes and the dashboard ends.
pub type Shared = Arc<Mutex<Cast>>;

/// An asciicast being written.
#[derive(Debug)]
pub struct Cast {
    path: PathBuf,
    file: BufWriter<File>,
    started: Instant,
    /// Bytes written since the last frame (a frame ends at a flush).
    pending: Vec<u8>,
    /// The first failure to write the file; casting stops there.
    failed: Option<io::Error>,
}

impl Cast {
    /// Creates `path` for the terminal's present size, to record one
    /// dashboard or several in turn (the tour's chapters).
    pub fn open(path: &Path, title: &str) -> Result<Shared, Error> {
        let (w, h) = ratatui::crossterm::terminal::size().map_err(Error::Terminal)?;
        let c = Cast::create(path, w, h, title).map_err(|e| failed(path, e))?;
        Ok(Arc::new(Mutex::new(c)))
    }

    /// Creates `path` and writes the header for a `width`×`height`
    /// terminal.
    pub fn create(path: &Path, width: u16, height: u16, title: &str) -> io::Result<Cast> {
        let mut file = BufWriter::new(File::create(path)?);
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let header = json!({
            "version": 2,
            "width": width,
            "height": height,
            "timestamp": timestamp,
            "title": title,
            "env": { "TERM": std::env::var("TERM").unwrap_or_default() },
        });
        writeln!(file, "{header}")?;
        Ok(Cast {
            path: path.to_path_buf(),
            file,
            started: Instant::now(),
            pending: Vec::new(),
            failed: None,
        })
    }

    fn event(&mut self, kind: &str, data: &str) {
        if self.failed.is_some() {
            return;
        }
        let t = self.started.elapsed().as_secs_f64();
        let line = json!([(t * 1e6).round() / 1e6, kind, data]);
        if let Err(e) = writeln!(self.file, "{line}") {
            self.failed = Some(e);
        }
    }

    /// The frame written since the last one, as one output event. A
    /// character split across writes waits for its other bytes.
    fn frame(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            // Not UTF-8 at all (never from the dashboard): kept readable.
            Err(_) => self.pending.len(),
        };
        let text = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
        self.pending.drain(..valid);
        self.event("o", &text);
    }

    /// The terminal is now `width`×`height`.
    pub fn resized(&mut self, width: u16, height: u16) {
        self.frame();
        self.event("r", &format!("{width}x{height}"));
    }

    /// Writes what is left and says whether every event reached the
    /// file; the cast can go on recording after.
    pub fn finish(&mut self) -> Result<(), Error> {
        self.frame();
        let written = match self.failed.take() {
            Some(e) => Err(e),
            None => self.file.flush(),
        };
        written.map_err(|e| failed(&self.path, e))
    }
}

/// Writing the cast at `path` failed.
fn failed(path: &Path, source: io::Error) -> Error {
    Error::Cast {
        path: path.to_path_buf(),
        source,
    }
}

impl Screen {
    /// The terminal, recorded into `cast` when given.
    pub fn new(cast: Option<Shared>) -> Screen {
        Screen {
            out: io::stdout(),
            cast,
        }
    }
}

/// The cast, locked (a panic elsewhere leaves it usable).
pub fn lock(c: &Shared) -> std::sync::MutexGuard<'_, Cast> {
    c.lock().unwrap_or_else(|e| e.into_inner())
}

impl Write for Screen {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        if let Some(c) = &self.cast {
            lock(c).pending.extend_from_slice(&buf[..n]);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Some(c) = &self.cast {
            lock(c).frame();
        }
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cast_is_a_header_then_timed_events_and_splits_no_character() {
        let dir = std::env::temp_dir().join(format!("chaoslab-cast-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.cast");
        let mut c = Cast::create(&path, 80, 24, "t").unwrap();
        // "×" is two bytes; the first ends one write, the second starts
        // the next frame's.
        c.pending.extend_from_slice(b"\x1b[1;1H8.00\xc3");
        c.frame();
        c.pending.extend_from_slice(b"\x97 D");
        c.frame();
        c.resized(100, 30);
        c.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["version"], 2);
        assert_eq!(
            (lines[0]["width"].clone(), lines[0]["height"].clone()),
            (json!(80), json!(24))
        );
        assert_eq!(lines[1][1], "o");
        assert_eq!(lines[1][2], "\u{1b}[1;1H8.00");
        assert_eq!(lines[2][2], "× D");
        assert_eq!(lines[3][1], "r");
        assert_eq!(lines[3][2], "100x30");
        let times: Vec<f64> = lines[1..].iter().map(|l| l[0].as_f64().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
