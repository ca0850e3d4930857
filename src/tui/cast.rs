//! `--cast FILE`: the console's frames written as an asciicast v2 file, so that a run can go
//! into slides or a web page (asciinema's player, `agg` for a GIF).
//!
//! The file is a JSON header line (`version`, `width`, `height`, `timestamp`, `title`)
//! followed by one `[seconds, "o", text]` event per frame: the terminal output that turns the
//! previous frame into this one (cursor moves, colours, characters), built from ratatui's
//! buffers rather than captured from the terminal, so it holds exactly what the console
//! drew. A resize is an `[seconds, "r", "COLSxROWS"]` event followed by a whole frame.
//! Writing stops with a warning in the log when the disk refuses (the console goes on).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

/// An asciicast v2 file being written.
pub struct Cast {
    out: Box<dyn Write + Send>,
    path: PathBuf,
    title: String,
    started: Instant,
    /// The frame on screen, which the next one is drawn over; `None` before the first.
    shown: Option<Buffer>,
    frames: u64,
}

impl std::fmt::Debug for Cast {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cast")
            .field("path", &self.path)
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

impl Cast {
    /// Creates (or truncates) `path`; called before the console opens, so a path that cannot
    /// be written is a clear error on a normal screen.
    pub fn create(path: &Path, title: &str) -> Result<Cast> {
        let file = File::create(path).with_context(|| format!("cannot write the cast {}", path.display()))?;
        Ok(Cast::to_writer(Box::new(BufWriter::new(file)), path, title))
    }

    /// A cast written to any writer (tests write to memory).
    pub fn to_writer(out: Box<dyn Write + Send>, path: &Path, title: &str) -> Cast {
        Cast {
            out,
            path: path.to_path_buf(),
            title: title.to_string(),
            started: Instant::now(),
            shown: None,
            frames: 0,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Writes `frame`, drawn now, as the change from the frame before it.
    pub fn frame(&mut self, frame: &Buffer) -> std::io::Result<()> {
        self.frame_at(frame, self.started.elapsed().as_secs_f64())
    }

    /// Writes `frame` at `seconds` since the start.
    pub fn frame_at(&mut self, frame: &Buffer, seconds: f64) -> std::io::Result<()> {
        let (width, height) = (frame.area.width, frame.area.height);
        let text = match &self.shown {
            None => {
                let header = serde_json::json!({
                    "version": 2,
                    "width": width,
                    "height": height,
                    "timestamp": chrono::Utc::now().timestamp(),
                    "title": self.title,
                    "env": { "TERM": "xterm-256color" },
                });
                writeln!(self.out, "{header}")?;
                whole(frame)
            }
            Some(shown) if shown.area != frame.area => {
                event(&mut self.out, seconds, "r", &format!("{width}x{height}"))?;
                whole(frame)
            }
            Some(shown) => changes(shown, frame),
        };
        if !text.is_empty() || self.frames == 0 {
            event(&mut self.out, seconds, "o", &text)?;
        }
        self.shown = Some(frame.clone());
        self.frames += 1;
        Ok(())
    }

    /// Flushes the file; call it when the console closes.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

fn event(out: &mut dyn Write, seconds: f64, kind: &str, text: &str) -> std::io::Result<()> {
    let line = serde_json::json!([(seconds * 1e6).round() / 1e6, kind, text]);
    writeln!(out, "{line}")
}

/// The output that draws `frame` on a cleared screen.
fn whole(frame: &Buffer) -> String {
    let mut out = String::from("\x1b[0m\x1b[H\x1b[2J");
    out.push_str(&changes(&Buffer::empty(frame.area), frame));
    out
}

/// The output that turns `shown` into `next` (the same size): each changed cell, with a
/// cursor move where it does not follow the one before, and a colour change where its
/// style differs.
fn changes(shown: &Buffer, next: &Buffer) -> String {
    let mut out = String::new();
    let mut cursor: Option<(u16, u16)> = None;
    let mut style: Option<(Color, Color, Modifier)> = None;
    for (x, y, cell) in shown.diff(next) {
        if cursor != Some((x, y)) {
            let _ = write!(out, "\x1b[{};{}H", y + 1, x + 1);
        }
        let wanted = (cell.fg, cell.bg, cell.modifier);
        if style != Some(wanted) {
            out.push_str(&sgr(wanted));
            style = Some(wanted);
        }
        let symbol = cell.symbol();
        out.push_str(symbol);
        let width = unicode_width::UnicodeWidthStr::width(symbol).max(1) as u16;
        cursor = Some((x.saturating_add(width), y));
    }
    if style.is_some() {
        out.push_str("\x1b[0m");
    }
    out
}

/// The escape sequence that sets a cell's colours and attributes from the defaults.
fn sgr((fg, bg, modifier): (Color, Color, Modifier)) -> String {
    let mut codes = vec!["0".to_string()];
    for (m, code) in [
        (Modifier::BOLD, "1"),
        (Modifier::DIM, "2"),
        (Modifier::ITALIC, "3"),
        (Modifier::UNDERLINED, "4"),
        (Modifier::SLOW_BLINK, "5"),
        (Modifier::REVERSED, "7"),
        (Modifier::HIDDEN, "8"),
        (Modifier::CROSSED_OUT, "9"),
    ] {
        if modifier.contains(m) {
            codes.push(code.to_string());
        }
    }
    if let Some(c) = colour(fg, false) {
        codes.push(c);
    }
    if let Some(c) = colour(bg, true) {
        codes.push(c);
    }
    format!("\x1b[{}m", codes.join(";"))
}

/// A colour's SGR code, `None` for the terminal's default.
fn colour(c: Color, background: bool) -> Option<String> {
    let base = if background { 40 } else { 30 };
    let named = |i: u8| Some(format!("{}", base + i));
    let bright = |i: u8| Some(format!("{}", base + 60 + i));
    match c {
        Color::Reset => None,
        Color::Black => named(0),
        Color::Red => named(1),
        Color::Green => named(2),
        Color::Yellow => named(3),
        Color::Blue => named(4),
        Color::Magenta => named(5),
        Color::Cyan => named(6),
        Color::Gray => named(7),
        Color::DarkGray => bright(0),
        Color::LightRed => bright(1),
        Color::LightGreen => bright(2),
        Color::LightYellow => bright(3),
        Color::LightBlue => bright(4),
        Color::LightMagenta => bright(5),
        Color::LightCyan => bright(6),
        Color::White => bright(7),
        Color::Indexed(i) => Some(format!("{};5;{i}", base + 8)),
        Color::Rgb(r, g, b) => Some(format!("{};2;{r};{g};{b}", base + 8)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::layout::Rect;
    use ratatui::style::Style;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::Error::other("poisoned"))?
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What a terminal shows after the cast's output events (rows x cols).
    fn played(events: &[serde_json::Value], rows: u16, cols: u16) -> String {
        let size = |n| std::num::NonZeroU16::new(n).expect("a size");
        let mut terminal = vt100::Parser::new(size(rows), size(cols), 0);
        for e in events.iter().filter(|e| e[1] == "o") {
            terminal.process(e[2].as_str().expect("text").as_bytes());
        }
        terminal.screen().contents()
    }

    fn lines(shared: &Shared) -> Vec<serde_json::Value> {
        let bytes = shared.0.lock().expect("lock").clone();
        String::from_utf8(bytes)
            .expect("utf-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect()
    }

    #[test]
    fn a_cast_is_a_header_then_one_event_per_changed_frame() {
        let shared = Shared::default();
        let mut cast = Cast::to_writer(Box::new(shared.clone()), Path::new("t.cast"), "leader-crash");
        let mut a = Buffer::empty(Rect::new(0, 0, 20, 3));
        a.set_string(0, 0, "broker 1 online", Style::default());
        cast.frame_at(&a, 0.0).expect("write");
        // The same frame again changes nothing and writes nothing.
        cast.frame_at(&a, 0.25).expect("write");
        let mut b = a.clone();
        b.set_string(9, 0, "fenced", Style::default().fg(Color::Red));
        cast.frame_at(&b, 0.5).expect("write");
        let out = lines(&shared);
        assert_eq!(out.len(), 3, "{out:?}");
        assert_eq!(out[0]["version"], 2);
        assert_eq!(out[0]["width"], 20);
        assert_eq!(out[0]["height"], 3);
        assert_eq!(out[0]["title"], "leader-crash");
        assert_eq!(out[1][1], "o");
        let first = out[1][2].as_str().expect("text");
        assert!(first.starts_with("\x1b[0m\x1b[H\x1b[2J"), "{first:?}");
        assert!(played(&out[1..2], 3, 20).starts_with("broker 1 online"), "{first:?}");
        assert_eq!(out[2][0], 0.5);
        let change = out[2][2].as_str().expect("text");
        // Only the changed word, placed at row 1 column 10, in red.
        assert!(change.starts_with("\x1b[1;10H\x1b[0;31mfenced"), "{change:?}");
        assert!(!change.contains("broker"), "{change:?}");
        assert!(played(&out[1..], 3, 20).starts_with("broker 1 fenced"));
    }

    #[test]
    fn a_resize_is_an_r_event_and_a_whole_frame() {
        let shared = Shared::default();
        let mut cast = Cast::to_writer(Box::new(shared.clone()), Path::new("t.cast"), "t");
        cast.frame_at(&Buffer::empty(Rect::new(0, 0, 10, 2)), 0.0)
            .expect("write");
        let mut big = Buffer::empty(Rect::new(0, 0, 30, 5));
        big.set_string(0, 4, "中文 ok", Style::default());
        cast.frame_at(&big, 1.0).expect("write");
        let out = lines(&shared);
        assert_eq!(out[2], serde_json::json!([1.0, "r", "30x5"]));
        let text = out[3][2].as_str().expect("text");
        assert!(text.contains("\x1b[2J"), "{text:?}");
        assert_eq!(played(&out[1..], 5, 30).trim(), "中文 ok");
    }

    #[test]
    fn colours_and_attributes_become_sgr_codes() {
        assert_eq!(sgr((Color::Reset, Color::Reset, Modifier::empty())), "\x1b[0m");
        assert_eq!(
            sgr((
                Color::Indexed(208),
                Color::Rgb(1, 2, 3),
                Modifier::BOLD | Modifier::REVERSED
            )),
            "\x1b[0;1;7;38;5;208;48;2;1;2;3m"
        );
        assert_eq!(sgr((Color::DarkGray, Color::Blue, Modifier::empty())), "\x1b[0;90;44m");
    }
}
