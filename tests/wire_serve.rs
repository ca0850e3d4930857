//! `kdeck serve`: prints its listeners, answers stdin commands one line each, keeps running
//! when stdin ends, and stops cleanly on SIGTERM.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Kills the server if the test fails before it stops it.
struct Reaper(std::process::Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn next_line_with(lines: &mpsc::Receiver<String>, prefix: &str) -> String {
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no line starting with {prefix:?}"));
        if line.starts_with(prefix) {
            return line;
        }
    }
}

#[test]
fn serve_answers_commands_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("kdeck.toml");
    std::fs::write(&config, "[wire]\nbase_port = 0\n").expect("config written");
    let child = Command::new(env!("CARGO_BIN_EXE_kdeck"))
        .args(["serve", "--ephemeral", "--brokers", "2", "--no-demo", "--config"])
        .arg(&config)
        .env("KDECK_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kdeck serve starts");
    let mut child = Reaper(child);
    let stdout = child.0.stdout.take().expect("stdout");
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let bootstrap = next_line_with(&lines, "bootstrap.servers=");
    assert_eq!(bootstrap.split(',').count(), 2, "{bootstrap}");
    let broker1 = bootstrap.rsplit(',').next().expect("an address").to_string();
    let mut stdin = child.0.stdin.take().expect("stdin");

    writeln!(stdin, "kill 1").expect("command sent");
    assert_eq!(next_line_with(&lines, "ok"), "ok broker 1 killed");
    assert!(
        std::net::TcpStream::connect(&broker1).is_err(),
        "a killed broker's port refuses connections"
    );
    writeln!(stdin, "kill 1").expect("command sent");
    assert!(next_line_with(&lines, "error").contains("not running"));
    writeln!(stdin, "start 1").expect("command sent");
    assert_eq!(next_line_with(&lines, "ok"), "ok broker 1 started");
    std::net::TcpStream::connect(&broker1).expect("the port is open again");
    writeln!(stdin, "status").expect("command sent");
    assert!(next_line_with(&lines, "ok").starts_with("ok controller="));
    writeln!(stdin, "explode 3").expect("command sent");
    assert!(next_line_with(&lines, "error").contains("unknown command"));

    // The end of stdin is not a shutdown; SIGTERM is.
    drop(stdin);
    std::net::TcpStream::connect(&broker1).expect("still serving after stdin ended");
    let pid = child.0.id() as libc::pid_t;
    // SAFETY: sending a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = child.0.wait().expect("kdeck serve exits");
    assert!(status.success(), "clean exit on SIGTERM: {status}");
}
