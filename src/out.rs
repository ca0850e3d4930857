//! Standard output for the commands, a line at a time. A reader that goes away
//! (`kdeck scenario run NAME --headless | head`) is not an error: from then on nothing more
//! is printed and the command ends as it would have, quietly, with its own exit code (0
//! when all went well), as kdeck's kcat-like commands already do. `println!` would panic
//! there instead.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// The reader of stdout has gone.
static CLOSED: AtomicBool = AtomicBool::new(false);
/// Writing failed otherwise (a full disk): said once on stderr.
static FAILED: AtomicBool = AtomicBool::new(false);

/// Writes `text` and a newline to stdout, unless the reader has gone.
pub fn line(text: &str) {
    write(text, true);
}

/// Writes `text` as it is (no newline added), unless the reader has gone.
pub fn text(text: &str) {
    write(text, false);
}

fn write(text: &str, newline: bool) {
    if closed() {
        return;
    }
    let mut out = io::stdout().lock();
    let result = out
        .write_all(text.as_bytes())
        .and_then(|()| if newline { out.write_all(b"\n") } else { Ok(()) })
        .and_then(|()| out.flush());
    if let Err(e) = result {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != io::ErrorKind::BrokenPipe {
            FAILED.store(true, Ordering::Relaxed);
            eprintln!("kdeck: cannot write to stdout: {e}");
        }
    }
}

/// Whether nothing more will be printed: a long command may stop early.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// Whether writing failed for another reason than a reader that went away.
pub fn failed() -> bool {
    FAILED.load(Ordering::Relaxed)
}

/// `println!` through [`line`].
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::line(&format!($($arg)*))
    };
}
pub(crate) use outln;
