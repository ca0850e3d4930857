//! `kdeck serve` as a child process on free ports, driven through its stdin commands and
//! killed if the test fails before it is done with it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub struct Serve {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    pub home: tempfile::TempDir,
    /// `host:port,...` as serve prints it.
    pub bootstrap: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// Three brokers, no demo; `config` is added to a configuration that already picks free
    /// ports. Leadership moves back only when asked, so elections are the test's doing.
    pub fn start(config: &str) -> Serve {
        let home = tempfile::tempdir().expect("temp dir");
        let path = home.path().join("serve.toml");
        std::fs::write(
            &path,
            format!("[wire]\nbase_port = 0\n[cluster]\nauto_leader_rebalance = false\n{config}"),
        )
        .expect("config written");
        let mut child = Command::new(env!("CARGO_BIN_EXE_kdeck"))
            .args(["serve", "--ephemeral", "--brokers", "3", "--no-demo", "--config"])
            .arg(&path)
            .env("KDECK_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kdeck serve starts");
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take().expect("stdin");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut serve = Serve {
            child,
            stdin,
            lines,
            home,
            bootstrap: String::new(),
        };
        let line = serve.line_with("bootstrap.servers=");
        serve.bootstrap = line.trim_start_matches("bootstrap.servers=").to_string();
        serve
    }

    /// The next output line starting with `prefix` (waits up to a minute).
    pub fn line_with(&self, prefix: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no line starting with {prefix:?}"));
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    /// Sends a line command (`kill 1`) and returns its `ok ...` reply.
    pub fn command(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").expect("command sent");
        let reply = self.line_with("");
        assert!(reply.starts_with("ok"), "{command}: {reply}");
        reply
    }
}
