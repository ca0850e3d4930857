//! The real binary in a pseudo-terminal: the dashboard appears, broker 1 is killed with the
//! key (confirmed), is shown down with its leaderships moved, comes back into the ISR after
//! a restart, and `q` exits cleanly. Every wait is for a condition on the screen.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

const PATIENCE: Duration = Duration::from_secs(60);

struct Console {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
}

impl Console {
    fn start(args: &[&str]) -> Console {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: 40,
                cols: 120,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pty");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_kdeck"));
        cmd.args(args);
        cmd.env("TERM", "xterm-256color");
        let child = pty.slave.spawn_command(cmd).expect("start kdeck");
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().expect("pty reader");
        let writer = pty.master.take_writer().expect("pty writer");
        let size = |n| std::num::NonZeroU16::new(n).expect("a screen size");
        let screen = Arc::new(Mutex::new(vt100::Parser::new(size(40), size(120), 0)));
        let parser = Arc::clone(&screen);
        std::thread::spawn(move || {
            let _master = pty.master;
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                parser.lock().expect("parser").process(&buf[..n]);
            }
        });
        Console { screen, writer, child }
    }

    fn text(&self) -> String {
        self.screen.lock().expect("parser").screen().contents()
    }

    fn wait_for(&self, what: &str, condition: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = self.text();
            if condition(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keys(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).expect("type");
        self.writer.flush().expect("flush");
    }
}

/// The brokers pane row of a broker: its id, state and leader count.
fn broker_row(screen: &str, id: i32) -> Option<(String, usize)> {
    screen.lines().find_map(|line| {
        let cells: Vec<&str> = line.trim_start_matches(['┃', '│']).split_whitespace().collect();
        let at = if cells.get(1) == Some(&"◆") { 2 } else { 1 };
        (cells.first() == Some(&id.to_string().as_str()) && cells.len() > at + 1)
            .then(|| (cells[at].to_string(), cells[at + 1].parse().ok()))
            .and_then(|(state, leaders)| leaders.map(|l| (state, l)))
            .filter(|(state, _)| ["online", "fenced", "paused", "stopped", "killed"].contains(&state.as_str()))
    })
}

#[test]
fn kill_and_restart_a_broker_from_the_keyboard() {
    // Kafka listeners on free ports, so the test runs beside anything on 9092.
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("kdeck.toml");
    std::fs::write(&config, "[wire]\nbase_port = 0\n").expect("write the config");
    let config = config.to_str().expect("a UTF-8 temp path");
    let mut console = Console::start(&["--ephemeral", "--brokers", "3", "--config", config]);
    console.wait_for("the dashboard with three brokers up", |s| {
        s.contains("brokers up 3/3") && s.contains("page-views") && broker_row(s, 1).is_some_and(|(_, l)| l > 0)
    });

    console.keys("1");
    console.keys("j");
    console.keys("x");
    console.wait_for("the confirmation", |s| s.contains("Kill broker 1"));
    console.keys("y");
    let screen = console.wait_for("broker 1 down with no leaderships", |s| {
        s.contains("brokers up 2/3") && broker_row(s, 1) == Some(("killed".into(), 0))
    });
    assert!(screen.contains("✗1"), "broker 1's replicas show offline:\n{screen}");
    console.wait_for("no partition led by broker 1", |s| !s.contains("★1"));

    console.keys("r");
    console.wait_for("broker 1 back in every ISR", |s| {
        s.contains("brokers up 3/3") && s.contains("under-replicated 0") && !s.contains("✗1")
    });

    console.keys("q");
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = console.child.try_wait().expect("wait for kdeck") {
            break status;
        }
        assert!(Instant::now() < deadline, "kdeck did not exit after q");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "kdeck exited with {status:?}");
}
