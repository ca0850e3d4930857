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
    console.exits_cleanly();
}

impl Console {
    fn exits_cleanly(&mut self) {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for kdeck") {
                break status;
            }
            assert!(Instant::now() < deadline, "kdeck did not exit after q");
            std::thread::sleep(Duration::from_millis(100));
        };
        assert!(status.success(), "kdeck exited with {status:?}");
    }
}

/// `kdeck replay FILE --cast OUT`: the recording plays in the console one step per
/// recorded action (each held until `n`), and the cast file, played back in a terminal
/// emulator, shows the frames the console drew.
#[test]
fn a_recording_plays_in_the_console_step_by_step_and_casts_its_frames() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("kdeck.toml");
    std::fs::write(&config, "[wire]\nbase_port = 0\n").expect("write the config");
    let recording = dir.path().join("class.toml");
    std::fs::write(
        &recording,
        r#"[recording]
version = 1
kdeck = "test"
started = "2026-01-01T10:00:00Z"
brokers = 3
demo = false
ended_ms = 3000

[[action]]
at_ms = 500
replayable = true
action = { action = "kill_broker", broker = 1 }

[[action]]
at_ms = 1500
replayable = true
action = { action = "start_broker", broker = 1 }

[[event]]
at_ms = 510
text = "broker 1 crashed"
"#,
    )
    .expect("write the recording");
    let cast = dir.path().join("class.cast");
    let path = |p: &std::path::Path| p.to_str().expect("a UTF-8 temp path").to_string();
    let mut console = Console::start(&[
        "replay",
        &path(&recording),
        "--config",
        &path(&config),
        "--cast",
        &path(&cast),
    ]);
    console.wait_for("the replay's first caption", |s| {
        s.contains("Replay of class.toml") && s.contains("Press n to begin")
    });
    console.keys("n");
    console.wait_for("the start held", |s| s.contains("[1/3]") && s.contains("HELD"));
    console.keys("n");
    let screen = console.wait_for("broker 1 killed as recorded, then held", |s| {
        s.contains("[2/3]") && s.contains("HELD") && broker_row(s, 1).is_some_and(|(state, _)| state == "killed")
    });
    assert!(
        screen.contains("At 0.5 s the recording did: kill broker 1") && screen.contains("broker 1 crashed"),
        "the caption says what was done and what the recording saw:\n{screen}"
    );
    console.keys("n");
    console.wait_for("broker 1 started again", |s| {
        s.contains("[3/3]") && s.contains("HELD") && broker_row(s, 1).is_some_and(|(state, _)| state != "killed")
    });
    console.keys("q");
    console.exits_cleanly();

    let text = std::fs::read_to_string(&cast).expect("the cast was written");
    let mut lines = text.lines();
    let header: serde_json::Value = serde_json::from_str(lines.next().expect("a header")).expect("JSON header");
    assert_eq!(header["version"], 2);
    assert_eq!(
        (header["width"].as_u64(), header["height"].as_u64()),
        (Some(120), Some(40))
    );
    // Played back in a terminal emulator, the frames show the last step as it was shown.
    let size = |n| std::num::NonZeroU16::new(n).expect("a screen size");
    let mut player = vt100::Parser::new(size(40), size(120), 0);
    let mut last = 0.0;
    let mut frames = 0;
    for line in lines {
        let event: serde_json::Value = serde_json::from_str(line).expect("a JSON event");
        let at = event[0].as_f64().expect("a time");
        assert!(at >= last, "times only grow: {at} after {last}");
        last = at;
        assert_eq!(event[1], "o");
        player.process(event[2].as_str().expect("text").as_bytes());
        frames += 1;
    }
    let shown = player.screen().contents();
    assert!(frames > 3, "one event per changed frame, {frames} here");
    assert!(
        shown.contains("[3/3]") && shown.contains("start broker 1") && shown.contains("HELD"),
        "the cast's last frame is the console's:\n{shown}"
    );
}
