//! `kdeck serve`: prints its listeners, answers stdin commands one line each, keeps running
//! when stdin ends, stops cleanly on SIGTERM, and keeps its listeners through running out of
//! file descriptors.

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

/// `kdeck serve` of 2 brokers on free ports, no demo, logging at `log`, with stdin and stdout
/// piped and stderr as `stderr`; the directory holds its configuration.
fn serve(log: &str, stderr: Stdio) -> (tempfile::TempDir, Reaper) {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("kdeck.toml");
    std::fs::write(&config, "[wire]\nbase_port = 0\n").expect("config written");
    let child = Command::new(env!("CARGO_BIN_EXE_kdeck"))
        .args(["serve", "--ephemeral", "--brokers", "2", "--no-demo", "--config"])
        .arg(&config)
        .env("KDECK_LOG", log)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("kdeck serve starts");
    (dir, Reaper(child))
}

#[test]
fn serve_answers_commands_and_stops_on_sigterm() {
    let (_dir, mut child) = serve("warn", Stdio::null());
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

/// An ApiVersions v0 request: the smallest exchange that shows a connection is served.
fn api_versions(stream: &mut std::net::TcpStream, correlation_id: i32) -> i32 {
    use std::io::Read;
    let mut body = Vec::new();
    body.extend_from_slice(&18i16.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&correlation_id.to_be_bytes());
    body.extend_from_slice(&(-1i16).to_be_bytes());
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    stream.write_all(&frame).expect("request sent");
    let mut head = [0u8; 8];
    stream.read_exact(&mut head).expect("an answer");
    let length = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    let mut rest = vec![0u8; length as usize - 4];
    stream.read_exact(&mut rest).expect("the whole answer");
    i32::from_be_bytes([head[4], head[5], head[6], head[7]])
}

fn connect(addr: &str) -> std::net::TcpStream {
    let stream = std::net::TcpStream::connect(addr).expect("connects");
    // A safety net against a hang, not a measure: answers come in milliseconds.
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout set");
    stream
}

#[test]
fn running_out_of_file_descriptors_does_not_take_the_listener_down() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("kdeck.toml");
    std::fs::write(&config, "[wire]\nbase_port = 0\n").expect("config written");
    let child = Command::new(env!("CARGO_BIN_EXE_kdeck"))
        .args(["serve", "--ephemeral", "--brokers", "1", "--no-demo", "--config"])
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
    let addr = bootstrap.trim_start_matches("bootstrap.servers=").to_string();
    let mut existing = connect(&addr);
    assert_eq!(api_versions(&mut existing, 1), 1);

    // Leave the server a few descriptors, then connect more clients than it has left.
    let pid = child.0.id() as libc::pid_t;
    let open = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the server's descriptors")
        .count() as u64;
    let limit = libc::rlimit {
        rlim_cur: open + 8,
        rlim_max: open + 8,
    };
    // SAFETY: lowering a limit of the child this test started; both pointers are valid.
    let lowered = unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, &limit, std::ptr::null_mut()) };
    assert_eq!(lowered, 0, "{}", std::io::Error::last_os_error());
    let mut crowd: Vec<_> = (0..16).map(|_| connect(&addr)).collect();
    let failed = loop {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .expect("the server says accept failed");
        if line.contains("accept failed") {
            break line;
        }
    };
    assert!(failed.contains("Too many open files"), "{failed}");

    // The connection it had is served, and once descriptors are free again so are the
    // clients that waited and new ones.
    assert_eq!(api_versions(&mut existing, 2), 2);
    let mut waited = crowd.pop().expect("a client that waited");
    drop(crowd);
    assert_eq!(api_versions(&mut waited, 3), 3);
    let mut fresh = connect(&addr);
    assert_eq!(api_versions(&mut fresh, 4), 4);
    assert!(
        child.0.try_wait().expect("status").is_none(),
        "the server is still running"
    );
}

/// `kdeck serve`'s log says what happened in the timeline's words, not as Rust data.
#[test]
fn serve_logs_cluster_events_in_words() {
    let (_dir, mut child) = serve("info", Stdio::piped());
    let (tx, lines) = mpsc::channel();
    for stream in [
        Box::new(child.0.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
        Box::new(child.0.stderr.take().expect("stderr")),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
    }
    let mut stdin = child.0.stdin.take().expect("stdin");
    writeln!(stdin, "kill 1").expect("command sent");
    let mut seen = Vec::new();
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no \"broker 1 down\" in the log: {seen:#?}"));
        assert!(!line.contains("event="), "an event logged as data: {line}");
        let done = line.contains("broker 1 down: killed");
        seen.push(line);
        if done {
            break;
        }
    }
    assert!(
        seen.iter().any(|l| l.contains("topic __consumer_offsets created: ")),
        "{seen:#?}"
    );
}
