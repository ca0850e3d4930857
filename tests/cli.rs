//! The `kdeck` binary: its commands, and clear errors for bad command-line values.

use std::process::Command;

fn kdeck(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kdeck"))
        .args(args)
        .output()
        .expect("run kdeck")
}

#[test]
fn bench_storage_prints_perf_lines_and_the_summary() {
    let out = kdeck(&[
        "bench",
        "storage",
        "--bytes",
        "4MiB",
        "--segment-bytes",
        "1MiB",
        "--group-commit-secs",
        "0.2",
        "--writers",
        "2",
        "--rounds",
        "2",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for prefix in [
        "storage raw write (round 1):",
        "storage append (round 2, flush=never):",
        "storage read:",
        "storage recovery scan:",
        "storage group commit (flush=always, 1 writers):",
        "storage group commit (flush=always, 2 writers):",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(prefix)),
            "missing {prefix:?} in\n{stdout}"
        );
    }
    let last = stdout.lines().last().expect("output");
    let shape = last.starts_with("storage append: ") && last.contains(" MB/s = ") && last.contains("% of raw write (");
    assert!(shape, "unexpected summary line {last:?}");
}

#[test]
fn bad_values_get_clear_errors() {
    let out = kdeck(&["bench", "storage", "--bytes", "12parsecs"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--bytes") && stderr.contains("parsecs"), "{stderr}");

    let out = kdeck(&["--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--frobnicate"));
}

#[test]
fn without_a_terminal_the_console_refuses_to_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let out = kdeck(&["--data-dir", data.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the console needs a terminal"));
    assert!(!data.exists(), "nothing is started without a terminal");
}

#[test]
fn bench_engine_prints_throughput_latency_and_replication() {
    let out = kdeck(&["bench", "engine", "--secs", "0.5", "--partitions", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let produce = stdout
        .lines()
        .find(|l| l.starts_with("engine produce: "))
        .unwrap_or_else(|| panic!("no produce line in\n{stdout}"));
    for part in [
        "records/sec",
        "MB/sec",
        "ms avg latency",
        "ms p50",
        "ms p99",
        "ms p99.9",
        " failed",
    ] {
        assert!(produce.contains(part), "{part:?} missing from {produce:?}\n{stdout}");
    }
    // Every acks=all request of a healthy cluster is answered: a timeout here is a
    // replication stall (issue 24; the output names the events of the run).
    assert!(produce.contains(" 0 failed"), "{produce}\n{stdout}");
    assert!(
        stdout.lines().any(|l| l.starts_with("engine replication: ")),
        "{stdout}"
    );
}

#[test]
fn bench_consume_prints_kafkas_consumer_performance_columns() {
    let out = kdeck(&["bench", "consume", "--records", "20000", "--partitions", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = stdout.lines();
    assert_eq!(
        lines.next(),
        Some(
            "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
        )
    );
    let values: Vec<&str> = lines.next().expect("a data line").split(", ").collect();
    assert_eq!(values.len(), 10);
    let consumed: u64 = values[4].parse().expect("a record count");
    assert!(consumed >= 20_000, "every record was consumed: {consumed}");
}

#[test]
fn bench_e2e_prints_latency_percentiles_for_every_record() {
    let out = kdeck(&["bench", "e2e", "--rate", "2000", "--secs", "0.5", "--partitions", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("end-to-end: "))
        .unwrap_or_else(|| panic!("no end-to-end line in\n{stdout}"));
    assert!(line.starts_with("end-to-end: 1000 of 1000 records received"), "{line}");
    for part in [
        "ms avg latency",
        "ms max latency",
        "ms 50th",
        "ms 95th",
        "ms 99th",
        "ms 99.9th.",
    ] {
        assert!(line.contains(part), "{part:?} missing from {line:?}");
    }
}

/// `kdeck scenario check` reads files without running them: `ok`, or each problem at its
/// line and column, and exit code 1.
#[test]
fn scenario_check_says_ok_or_places_each_problem() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = dir.path().join("good.toml");
    let shipped = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/scenarios/leader-crash.toml"
    ))
    .expect("a shipped scenario");
    std::fs::write(&good, shipped.replace("name = \"leader-crash\"", "name = \"good\"")).expect("write");
    let bad = dir.path().join("my-crash.toml");
    std::fs::write(
        &bad,
        "name = \"my-crash\"\ntitle = \"t\"\nconcept = \"c\"\n[setup]\n[[step]]\ncaption = \"c\"\n\
         actions = [{ action = \"kil_broker\", broker = 1 }]\n",
    )
    .expect("write");
    let out = kdeck(&["scenario", "check", &good.display().to_string()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout, format!("{}: ok\n", good.display()));

    let out = kdeck(&[
        "scenario",
        "check",
        &good.display().to_string(),
        &bad.display().to_string(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "{}:7:23: step 1: unknown action \"kil_broker\"; a scenario may use: kill_broker,",
            bad.display()
        )),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 of 2 scenario files have problems"));
}

/// Runs kdeck with its stdout a pipe whose reader has already gone (`kdeck ... | head`
/// after head exited), so that its first line meets a closed pipe.
#[cfg(unix)]
fn kdeck_into_a_closed_pipe(args: &[&str]) -> std::process::Output {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    // SAFETY: both descriptors were just opened by pipe(2) and are owned here alone.
    let (reader, writer) = unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_kdeck"))
        .args(args)
        .stdout(std::process::Stdio::from(writer))
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run kdeck")
}

/// `kdeck scenario run NAME --headless | head` and friends: a reader that goes away ends
/// the command quietly (no panic, no message, exit code 0), as kdeck's kcat-like commands
/// already did.
#[cfg(unix)]
#[test]
fn every_printing_command_ends_quietly_on_a_closed_pipe() {
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = dir.path().join("good.toml");
    let shipped = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/scenarios/leader-crash.toml"
    ))
    .expect("a shipped scenario");
    std::fs::write(&scenario, shipped.replace("name = \"leader-crash\"", "name = \"good\"")).expect("write");
    let scenario = scenario.display().to_string();
    for args in [
        vec!["scenario", "list"],
        vec!["scenario", "check", &scenario],
        vec!["scenario", "run", "preferred-leader", "--headless"],
    ] {
        let out = kdeck_into_a_closed_pipe(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}
