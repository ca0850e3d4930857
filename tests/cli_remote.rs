//! The kcat-like commands against `kdeck serve` started by the test: a produce/consume round
//! trip with keys, partitions, formats and a consumer group; topic listing, description and
//! deletion; a group's offsets reset, deleted and the group deleted (kafka-consumer-groups.sh);
//! preferred-leader elections after a broker restart; a broker drained by a reassignment plan
//! (kafka-reassign-partitions.sh's files), throttled and the throttle cleared once it is done;
//! topic configs and the cluster's defaults altered and
//! described with their sources (kafka-configs.sh); clear, quick failures.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "common/serve.rs"]
mod serve;

/// `kdeck serve`, and the CLI pointed at it.
struct Server(serve::Serve);

impl Server {
    fn start() -> Server {
        Server(serve::Serve::start(""))
    }

    fn command(&mut self, command: &str) -> String {
        self.0.command(command)
    }

    /// `kdeck COMMAND -b BOOTSTRAP ARGS...` with `input` on stdin (the connection flags belong
    /// to the command, before an action such as `create`).
    fn kdeck(&self, args: &[&str], input: &[u8]) -> Output {
        let mut all: Vec<&str> = args.to_vec();
        all.splice(1..1, ["-b", self.0.bootstrap.as_str()]);
        kdeck(&all, input, self.0.home.path())
    }

    /// Like [`Server::kdeck`], and the command must succeed: its stdout.
    fn ok(&self, args: &[&str], input: &[u8]) -> String {
        let output = self.kdeck(args, input);
        assert!(
            output.status.success(),
            "kdeck {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("utf-8 output")
    }
}

/// Runs the binary with a configuration directory of its own, so no user configuration leaks in.
fn kdeck(args: &[&str], input: &[u8], home: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kdeck"))
        .args(args)
        .env("XDG_CONFIG_HOME", home)
        .env("KDECK_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kdeck runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().expect("kdeck exits");
    writer.join().expect("stdin written");
    output
}

/// `topics describe` rows of `topic`: (partition, leader, replicas, isr, log start, end).
fn describe(server: &Server, topic: &str) -> Vec<(i32, String, String, String, String, String)> {
    let out = server.ok(&["topics", "describe", topic], b"");
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().expect("a header").split_whitespace().collect();
    assert_eq!(
        header,
        [
            "TOPIC",
            "PARTITION",
            "LEADER",
            "EPOCH",
            "REPLICAS",
            "ISR",
            "OFFLINE",
            "LOG-START",
            "END"
        ]
    );
    lines
        .map(|line| {
            let cells: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(cells.len(), 9, "{line}");
            assert_eq!(cells[0], topic);
            (
                cells[1].parse().expect("a partition number"),
                cells[2].to_string(),
                cells[4].to_string(),
                cells[5].to_string(),
                cells[7].to_string(),
                cells[8].to_string(),
            )
        })
        .collect()
}

/// 1,000 distinct lines: keyed ones (`key:value`, split by `-K :`), Chinese and emoji text.
fn input_lines() -> Vec<String> {
    (0..1000)
        .map(|i| match i % 4 {
            0 => format!("user-{}:clicked {i}", i % 7),
            1 => format!("页面浏览 {i} 🚀"),
            2 => format!("plain line {i} with spaces"),
            _ => format!("k{i}:emoji 🎉 {i}"),
        })
        .collect()
}

/// The value each input line produces under `-K :`.
fn value_of(line: &str) -> &str {
    line.split_once(':').map_or(line, |(_, value)| value)
}

#[test]
fn produce_consume_groups_and_topics_round_trip() {
    let server = Server::start();
    server.ok(&["topics", "create", "rt", "-p", "3", "-r", "3"], b"");

    // The last line has no newline and still counts.
    let lines = input_lines();
    let input = lines.join("\n");
    server.ok(&["produce", "-t", "rt", "-K", ":"], input.as_bytes());

    let mut expected: Vec<&str> = lines.iter().map(|l| value_of(l)).collect();
    let all = server.ok(&["consume", "-t", "rt", "--from", "beginning", "-e"], b"");
    let mut got: Vec<&str> = all.lines().collect();
    assert_eq!(got.len(), 1000);
    got.sort_unstable();
    expected.sort_unstable();
    assert_eq!(got, expected, "every line came back once");

    // Per partition, the records come back in the order they were produced.
    let mut total = 0;
    let mut keyed_partition: BTreeMap<String, i32> = BTreeMap::new();
    for partition in 0..3 {
        let out = server.ok(
            &[
                "consume",
                "-t",
                "rt",
                "-p",
                &partition.to_string(),
                "-e",
                "-f",
                "%p:%o:%k=%s\\n",
            ],
            b"",
        );
        let mut previous_index = None;
        for (offset, line) in out.lines().enumerate() {
            let (p, rest) = line.split_once(':').expect("partition");
            let (o, rest) = rest.split_once(':').expect("offset");
            let (key, value) = rest.split_once('=').expect("key=value");
            assert_eq!(p, partition.to_string());
            assert_eq!(o, offset.to_string(), "offsets count up from 0");
            let index = lines
                .iter()
                .position(|l| value_of(l) == value && l.split_once(':').map_or("", |(k, _)| k) == key)
                .unwrap_or_else(|| panic!("{line} was not produced"));
            assert!(previous_index < Some(index), "{line} came out of order");
            previous_index = Some(index);
            if !key.is_empty() {
                let before = keyed_partition.insert(key.to_string(), partition);
                assert!(before.is_none_or(|b| b == partition), "key {key} is in one partition");
            }
            total += 1;
        }
    }
    assert_eq!(total, 1000);

    let ten = server.ok(&["consume", "-t", "rt", "-n", "10"], b"");
    assert_eq!(ten.lines().count(), 10);
    let last = server.ok(
        &["consume", "-t", "rt", "-p", "1", "--from", "-5", "-e", "-f", "%o\\n"],
        b"",
    );
    let offsets: Vec<i64> = last.lines().map(|o| o.parse().expect("an offset")).collect();
    assert_eq!(offsets.len(), 5, "{last}");
    assert!(offsets.windows(2).all(|w| w[1] == w[0] + 1), "{last}");

    // A group member reads everything once and commits where it stopped.
    let grouped = server.ok(&["consume", "-t", "rt", "-g", "g1", "-e"], b"");
    assert_eq!(grouped.lines().count(), 1000);
    let described = server.ok(&["groups", "describe", "g1"], b"");
    let rows: Vec<Vec<&str>> = described
        .lines()
        .skip_while(|l| !l.starts_with("TOPIC"))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 3, "{described}");
    for row in &rows {
        assert_eq!(row[0], "rt");
        assert_eq!(row[2], row[3], "committed == end: {described}");
        assert_eq!(row[4], "0", "no lag: {described}");
    }
    let ends: i64 = rows.iter().map(|r| r[3].parse::<i64>().expect("an offset")).sum();
    assert_eq!(ends, 1000);
    // The group's committed offsets hold: reading again as g1 finds nothing new.
    let again = server.ok(&["consume", "-t", "rt", "-g", "g1", "-e"], b"");
    assert_eq!(again, "");
    let groups = server.ok(&["groups", "list"], b"");
    assert!(groups.lines().any(|l| l.starts_with("g1 ")), "{groups}");

    let listed = server.ok(&["topics"], b"");
    let line = listed.lines().find(|l| l.starts_with("rt ")).expect("rt is listed");
    assert!(
        line.contains("partitions=3") && line.contains("replication=3"),
        "{line}"
    );
    // kcat -L's listing: the brokers, the controller marked, and rt's partitions.
    let kcat_l = server.ok(&["list", "rt"], b"");
    assert!(kcat_l.starts_with("Metadata for topic rt"), "{kcat_l}");
    assert_eq!(
        kcat_l.lines().filter(|l| l.starts_with("  broker ")).count(),
        3,
        "{kcat_l}"
    );
    assert_eq!(kcat_l.matches("(controller)").count(), 1, "{kcat_l}");
    assert!(kcat_l.contains("  topic \"rt\" with 3 partitions:"), "{kcat_l}");
    assert_eq!(
        kcat_l
            .lines()
            .filter(|l| l.starts_with("    partition ") && l.contains(", isrs: "))
            .count(),
        3,
        "{kcat_l}"
    );
    let described = describe(&server, "rt");
    assert_eq!(described.len(), 3);
    for (_, leader, replicas, isr, start, end) in &described {
        assert_eq!(replicas.split(',').count(), 3);
        assert_eq!(isr.split(',').count(), 3);
        assert_ne!(leader, "-");
        assert_eq!(start, "0");
        assert_ne!(end, "0");
    }

    // acks=0 gets no answer, yet the record is there once the command returned.
    server.ok(
        &[
            "produce",
            "-t",
            "rt",
            "-p",
            "2",
            "--acks",
            "0",
            "--value",
            "fire and forget",
        ],
        b"",
    );
    let newest = server.ok(&["consume", "-t", "rt", "-p", "2", "--from", "-1", "-e"], b"");
    assert_eq!(newest, "fire and forget\n");

    let missing = server.kdeck(&["topics", "describe", "nope"], b"");
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("kdeck: topic nope does not exist"));

    server.ok(&["topics", "delete", "rt"], b"");
    let listed = server.ok(&["topics", "list"], b"");
    assert!(!listed.lines().any(|l| l.starts_with("rt ")), "{listed}");
}

/// `groups describe GROUP`'s offset rows: (topic, partition, committed, end).
fn group_offsets(server: &Server, group: &str) -> Vec<(String, i32, String, String)> {
    let described = server.ok(&["groups", "describe", group], b"");
    described
        .lines()
        .skip_while(|l| !l.starts_with("TOPIC"))
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (
                cells[0].to_string(),
                cells[1].parse().expect("a partition"),
                cells[2].to_string(),
                cells[3].to_string(),
            )
        })
        .collect()
}

/// `groups reset-offsets` rows: (topic, partition, old, new, lag after).
fn reset_rows(out: &str) -> Vec<(String, i32, String, i64, i64)> {
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().expect("a header").split_whitespace().collect();
    assert_eq!(
        header,
        ["GROUP", "TOPIC", "PARTITION", "OLD-OFFSET", "NEW-OFFSET", "LAG-AFTER"]
    );
    lines
        .map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            (
                c[1].to_string(),
                c[2].parse().expect("a partition"),
                c[3].to_string(),
                c[4].parse().expect("an offset"),
                c[5].parse().expect("a lag"),
            )
        })
        .collect()
}

#[test]
fn group_offsets_are_reset_deleted_and_the_group_deleted_over_the_kafka_protocol() {
    let server = Server::start();
    server.ok(&["topics", "create", "rs", "-p", "2", "-r", "3"], b"");
    let lines = |n: usize| (0..n).map(|i| format!("record {i}")).collect::<Vec<_>>().join("\n");
    server.ok(&["produce", "-t", "rs", "-p", "0"], lines(20).as_bytes());
    server.ok(&["produce", "-t", "rs", "-p", "1"], lines(10).as_bytes());
    let read = server.ok(&["consume", "-t", "rs", "-g", "gr", "-e"], b"");
    assert_eq!(read.lines().count(), 30);
    let caught_up = vec![
        ("rs".to_string(), 0, "20".to_string(), "20".to_string()),
        ("rs".to_string(), 1, "10".to_string(), "10".to_string()),
    ];
    assert_eq!(group_offsets(&server, "gr"), caught_up);

    // A dry run (the default) shows old and new offsets and commits nothing.
    let plan = server.kdeck(
        &["groups", "reset-offsets", "gr", "--topic", "rs", "--to-earliest"],
        b"",
    );
    assert!(plan.status.success(), "{}", String::from_utf8_lossy(&plan.stderr));
    assert_eq!(
        reset_rows(&String::from_utf8_lossy(&plan.stdout)),
        vec![
            ("rs".to_string(), 0, "20".to_string(), 0, 20),
            ("rs".to_string(), 1, "10".to_string(), 0, 10),
        ]
    );
    assert!(String::from_utf8_lossy(&plan.stderr).contains("dry run"));
    assert_eq!(group_offsets(&server, "gr"), caught_up, "nothing changed");
    let shifted = server.ok(
        &[
            "groups",
            "reset-offsets",
            "gr",
            "--topic",
            "rs:0",
            "--shift-by",
            "-5",
            "--dry-run",
        ],
        b"",
    );
    assert_eq!(
        reset_rows(&shifted),
        vec![("rs".to_string(), 0, "20".to_string(), 15, 5)]
    );
    let clamped = server.ok(
        &["groups", "reset-offsets", "gr", "--all-topics", "--to-offset", "15"],
        b"",
    );
    assert_eq!(
        reset_rows(&clamped),
        vec![
            ("rs".to_string(), 0, "20".to_string(), 15, 5),
            ("rs".to_string(), 1, "10".to_string(), 10, 0),
        ],
        "past the end is clamped to the end"
    );

    // --execute commits: the group reads again from the new offset.
    let executed = server.ok(
        &[
            "groups",
            "reset-offsets",
            "gr",
            "--topic",
            "rs:1",
            "--to-offset",
            "4",
            "--execute",
        ],
        b"",
    );
    assert_eq!(
        reset_rows(&executed),
        vec![("rs".to_string(), 1, "10".to_string(), 4, 6)]
    );
    assert_eq!(
        group_offsets(&server, "gr")[1],
        ("rs".to_string(), 1, "4".to_string(), "10".to_string())
    );
    let again = server.ok(&["consume", "-t", "rs", "-g", "gr", "-e", "-f", "%p:%o\\n"], b"");
    let expected: Vec<String> = (4..10).map(|o| format!("1:{o}")).collect();
    assert_eq!(again.lines().collect::<Vec<_>>(), expected);

    // While a member is active, the group's offsets cannot be reset nor the group deleted.
    let mut member = Command::new(env!("CARGO_BIN_EXE_kdeck"))
        .args(["consume", "-b", &server.0.bootstrap, "-t", "rs", "-g", "gr"])
        .env("XDG_CONFIG_HOME", server.0.home.path())
        .env("KDECK_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("a member runs");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !server.ok(&["groups", "describe", "gr"], b"").contains("state=Stable") {
        assert!(Instant::now() < deadline, "the member never joined");
        std::thread::sleep(Duration::from_millis(200));
    }
    let refused = server.kdeck(&["groups", "reset-offsets", "gr", "--all-topics", "--to-latest"], b"");
    let deleted = server.kdeck(&["groups", "delete", "gr"], b"");
    // Ctrl-C: the member commits and leaves the group, as a Kafka consumer closing.
    // SAFETY: kill(2) on the pid of a child this test started and has not waited for.
    let signalled = unsafe { libc::kill(member.id() as libc::pid_t, libc::SIGINT) };
    if signalled != 0 {
        let _ = member.kill();
    }
    let _ = member.wait();
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains("Assignments can only be reset if the group 'gr' is inactive, but the current state is Stable."),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert_eq!(deleted.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&deleted.stderr).contains("NON_EMPTY_GROUP"),
        "{}",
        String::from_utf8_lossy(&deleted.stderr)
    );

    // The member left: the group is empty again; its offsets of partition 0 go, then the group.
    assert!(server.ok(&["groups", "describe", "gr"], b"").contains("state=Empty"));
    let removed = server.ok(&["groups", "delete-offsets", "gr", "--topic", "rs:0"], b"");
    assert_eq!(
        removed.lines().nth(1).map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["rs", "0", "Successful"])
    );
    assert!(
        group_offsets(&server, "gr").iter().all(|(_, p, _, _)| *p != 0),
        "partition 0's offset is gone"
    );
    let out = server.kdeck(&["groups", "delete", "gr"], b"");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("kdeck: deleted group gr"));
    let listed = server.ok(&["groups", "list"], b"");
    assert!(!listed.lines().any(|l| l.starts_with("gr ")), "{listed}");
    let twice = server.kdeck(&["groups", "delete", "gr"], b"");
    assert_eq!(twice.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&twice.stderr).contains("does not exist"));
}

#[test]
fn elect_restores_preferred_leaders_after_a_restart() {
    let mut server = Server::start();
    server.ok(&["topics", "create", "el", "-p", "3", "-r", "3"], b"");
    let preferred = |rows: &[(i32, String, String, String, String, String)]| {
        rows.iter()
            .all(|(_, leader, replicas, ..)| replicas.split(',').next() == Some(leader.as_str()))
    };
    let led_by = |rows: &[(i32, String, String, String, String, String)], broker: &str| {
        rows.iter().filter(|(_, leader, ..)| leader == broker).count()
    };
    let before = describe(&server, "el");
    assert!(preferred(&before), "{before:?}");
    assert_eq!(led_by(&before, "1"), 1, "one partition led by each broker");

    server.command("kill 1");
    wait_for(&server, "el", |rows| led_by(rows, "1") == 0);
    server.command("start 1");
    wait_for(&server, "el", |rows| {
        rows.iter().all(|(.., isr, _, _)| isr.split(',').count() == 3)
    });
    assert!(
        !preferred(&describe(&server, "el")),
        "broker 1 leads nothing after its restart"
    );

    let out = server.ok(&["elect", "--topic", "el"], b"");
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(out.lines().all(|l| l.ends_with("preferred leader")), "{out}");
    let after = describe(&server, "el");
    assert!(preferred(&after), "{after:?}");

    // Everything already led by its preferred replica: nothing to do is not a failure.
    server.ok(&["elect"], b"");
}

#[test]
fn reassign_plans_drains_a_broker_follows_the_move_and_refuses_bad_plans() {
    let server = Server::start();
    server.ok(&["topics", "create", "mv", "-p", "3", "-r", "2"], b"");
    let lines: Vec<String> = (0..300).map(|i| format!("record {i}")).collect();
    server.ok(&["produce", "-t", "mv"], lines.join("\n").as_bytes());

    // All of broker 2 cannot go: __consumer_offsets has 3 replicas on 3 brokers.
    let refused = server.kdeck(&["reassign", "plan", "--drain", "2"], b"");
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("has 3 replicas but only 2 brokers can take them"),
        "{said}"
    );

    // A plan to drain mv off broker 2: JSON on stdout, each change on stderr.
    let planned = server.kdeck(&["reassign", "plan", "--drain", "2", "--topic", "mv"], b"");
    assert!(planned.status.success(), "{}", String::from_utf8_lossy(&planned.stderr));
    let plan = String::from_utf8(planned.stdout).expect("utf-8");
    let changes = String::from_utf8_lossy(&planned.stderr);
    assert!(plan.starts_with("{\"version\":1,\"partitions\":["), "{plan}");
    assert!(changes.contains(" -> "), "{changes}");
    let moving = describe(&server, "mv")
        .iter()
        .filter(|(_, _, replicas, ..)| replicas.split(',').any(|r| r == "2"))
        .count();
    assert_eq!(
        plan.matches("\"topic\":\"mv\"").count(),
        moving,
        "only the partitions on broker 2 move: {plan}"
    );

    let file = server.0.home.path().join("plan.json");
    std::fs::write(&file, &plan).expect("plan written");
    let path = file.to_str().expect("utf-8 path");
    let executed = server.ok(&["reassign", "execute", path], b"");
    assert!(
        executed.contains("Save this to use as the --reassignment-json-file option during rollback"),
        "{executed}"
    );
    assert!(
        executed.contains("Successfully started partition reassignments for mv-"),
        "{executed}"
    );

    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = server.ok(&["reassign", "status", path], b"");
        assert!(status.starts_with("Status of partition reassignment:"), "{status}");
        let partitions = status.lines().filter(|l| l.starts_with("Reassignment of partition"));
        if partitions.clone().count() > 0 && partitions.into_iter().all(|l| l.ends_with("is completed.")) {
            break;
        }
        assert!(Instant::now() < deadline, "the moves did not complete: {status}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(server.ok(&["reassign", "status"], b""), "no reassignment in progress\n");
    let rows = describe(&server, "mv");
    assert!(
        rows.iter()
            .all(|(_, _, replicas, isr, ..)| !replicas.split(',').any(|r| r == "2") && isr.split(',').count() == 2),
        "{rows:?}"
    );
    let back = server.ok(&["consume", "-t", "mv", "--from", "beginning", "-e"], b"");
    let mut got: Vec<&str> = back.lines().collect();
    let mut expected: Vec<&str> = lines.iter().map(String::as_str).collect();
    got.sort_unstable();
    expected.sort_unstable();
    assert_eq!(got, expected, "every record is still there once");

    // Nothing to cancel; a plan naming a broker that does not exist; a malformed file.
    assert_eq!(
        server.ok(&["reassign", "cancel", "--all"], b""),
        "no reassignment in progress\n"
    );
    let bad = server.kdeck(
        &["reassign", "execute", "-"],
        br#"{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[0,7]}]}"#,
    );
    assert!(!bad.status.success());
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(said.contains("mv-0: INVALID_REPLICA_ASSIGNMENT"), "{said}");
    let broken = server.kdeck(
        &["reassign", "execute", "-"],
        b"{\"version\":1,\n\"partitions\":[oops]}",
    );
    assert!(!broken.status.success());
    let said = String::from_utf8_lossy(&broken.stderr);
    assert!(said.contains("line 2, column"), "{said}");
}

#[test]
fn a_throttled_reassignment_sets_the_throttle_and_status_removes_it_once_complete() {
    let server = Server::start();
    server.ok(&["topics", "create", "th", "-p", "2", "-r", "2"], b"");
    let lines: Vec<String> = (0..200).map(|i| format!("record {i}")).collect();
    server.ok(&["produce", "-t", "th"], lines.join("\n").as_bytes());
    let planned = server.kdeck(&["reassign", "plan", "--drain", "2", "--topic", "th"], b"");
    assert!(planned.status.success(), "{}", String::from_utf8_lossy(&planned.stderr));
    let plan = String::from_utf8(planned.stdout).expect("utf-8");
    let file = server.0.home.path().join("throttled.json");
    std::fs::write(&file, &plan).expect("plan written");
    let path = file.to_str().expect("utf-8 path");

    let executed = server.ok(&["reassign", "execute", path, "--throttle", "10MiB"], b"");
    assert!(
        executed.contains("The inter-broker throttle limit was set to 10485760 B/s"),
        "{executed}"
    );
    // Broker 2 holds a current replica of every moving partition: both rates are set on it,
    // as Kafka's tool sets them on every broker taking part, and the topic lists the moving
    // partitions' replicas.
    let broker = configs(&server, &["--broker", "2"]);
    for rate in [
        "leader.replication.throttled.rate",
        "follower.replication.throttled.rate",
    ] {
        assert_eq!(
            broker.get(rate),
            Some(&("10485760".to_string(), "DYNAMIC_BROKER_CONFIG".to_string())),
            "{rate}"
        );
    }
    let topic = configs(&server, &["--topic", "th"]);
    let (leaders, source) = topic
        .get("leader.replication.throttled.replicas")
        .cloned()
        .unwrap_or_default();
    assert_eq!(source, "DYNAMIC_TOPIC_CONFIG");
    assert!(leaders.split(',').any(|r| r.ends_with(":2")), "{leaders}");
    let followers = topic
        .get("follower.replication.throttled.replicas")
        .map(|(v, _)| v.clone())
        .unwrap_or_default();
    assert!(
        !followers.is_empty() && !followers.split(',').any(|r| r.ends_with(":2")),
        "the new replicas, not on broker 2: {followers}"
    );

    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let status = server.ok(&["reassign", "status", path], b"");
        if !status.contains("still in progress") {
            break status;
        }
        assert!(
            !status.contains("Clearing"),
            "the throttle stays while a move runs: {status}"
        );
        assert!(Instant::now() < deadline, "the moves did not complete: {status}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        status.contains("Clearing broker-level throttles on brokers 0,1,2"),
        "{status}"
    );
    assert!(
        status.contains("Clearing topic-level throttles on topics th"),
        "{status}"
    );
    assert_eq!(
        configs(&server, &["--broker", "2"]).get("leader.replication.throttled.rate"),
        Some(&(i64::MAX.to_string(), "DEFAULT_CONFIG".to_string()))
    );
    let overrides = server.ok(&["configs", "describe", "--topic", "th", "--overrides"], b"");
    assert_eq!(overrides, "", "no throttle left on the topic");
    let back = server.ok(&["consume", "-t", "th", "--from", "beginning", "-e"], b"");
    assert_eq!(back.lines().count(), lines.len(), "every record is still there");

    let bad = server.kdeck(&["reassign", "execute", path, "--throttle", "fast"], b"");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("fast"));
}

#[test]
fn delete_records_moves_the_log_start_and_add_partitions_grows_a_topic() {
    let server = Server::start();
    server.ok(&["topics", "create", "dr", "-p", "2", "-r", "3"], b"");
    let lines: String = (0..10).map(|i| format!("record {i}\n")).collect();
    server.ok(&["produce", "-t", "dr", "-p", "0"], lines.as_bytes());
    let start_and_end = |partition: i32| {
        describe(&server, "dr")
            .into_iter()
            .find(|row| row.0 == partition)
            .map(|(.., start, end)| (start, end))
    };
    assert_eq!(start_and_end(0), Some(("0".into(), "10".into())));

    let out = server.ok(&["records", "delete", "-t", "dr", "-p", "0", "--offset", "4"], b"");
    assert_eq!(out.trim(), "dr 0 low_watermark=4");
    assert_eq!(start_and_end(0), Some(("4".into(), "10".into())));
    let consumed = server.ok(&["consume", "-t", "dr", "-p", "0", "-e"], b"");
    assert_eq!(consumed.lines().next(), Some("record 4"), "{consumed}");

    // -1 is the high watermark; past it is OFFSET_OUT_OF_RANGE; a missing partition fails.
    let out = server.ok(&["records", "delete", "-t", "dr", "-p", "0", "--offset", "-1"], b"");
    assert_eq!(out.trim(), "dr 0 low_watermark=10");
    for (partition, offset, error) in [
        ("0", "11", "OFFSET_OUT_OF_RANGE"),
        ("7", "0", "UNKNOWN_TOPIC_OR_PARTITION"),
    ] {
        let failed = server.kdeck(
            &["records", "delete", "-t", "dr", "-p", partition, "--offset", offset],
            b"",
        );
        let stderr = String::from_utf8_lossy(&failed.stderr);
        assert!(!failed.status.success() && stderr.contains(error), "{stderr}");
    }

    server.ok(&["topics", "add-partitions", "dr", "--partitions", "5"], b"");
    let rows = describe(&server, "dr");
    assert_eq!(rows.iter().map(|r| r.0).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    assert!(rows.iter().all(|r| r.2.split(',').count() == 3), "{rows:?}");
    let failed = server.kdeck(&["topics", "add-partitions", "dr", "--partitions", "5"], b"");
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        !failed.status.success() && stderr.contains("INVALID_PARTITIONS"),
        "{stderr}"
    );
}

/// `configs describe` as `name -> (value, source)`.
fn configs(server: &Server, entity: &[&str]) -> BTreeMap<String, (String, String)> {
    let mut args = vec!["configs", "describe"];
    args.extend_from_slice(entity);
    server
        .ok(&args, b"")
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?.to_string();
            let value = words.next()?.to_string();
            let source = words.next()?.strip_prefix("source=")?.to_string();
            Some((name, (value, source)))
        })
        .collect()
}

#[test]
fn configs_are_altered_and_described_with_their_sources_as_kafka_configs_does() {
    let server = Server::start();
    server.ok(&["topics", "create", "cfg", "-p", "1", "-r", "3"], b"");
    let of = |name: &str, entity: &[&str]| configs(&server, entity).get(name).cloned().unwrap_or_default();
    let topic = ["--topic", "cfg"];
    assert_eq!(
        of("retention.ms", &topic),
        ("604800000".into(), "DEFAULT_CONFIG".into())
    );

    server.ok(
        &[
            "configs",
            "alter",
            "--topic",
            "cfg",
            "--add-config",
            "retention.ms=3600000,cleanup.policy=[compact,delete]",
        ],
        b"",
    );
    assert_eq!(
        of("retention.ms", &topic),
        ("3600000".into(), "DYNAMIC_TOPIC_CONFIG".into())
    );
    assert_eq!(
        of("cleanup.policy", &topic),
        ("compact,delete".into(), "DYNAMIC_TOPIC_CONFIG".into())
    );
    let overrides = server.ok(&["configs", "describe", "--topic", "cfg", "--overrides"], b"");
    assert_eq!(overrides.lines().count(), 2, "{overrides}");

    server.ok(
        &["configs", "alter", "--topic", "cfg", "--delete-config", "retention.ms"],
        b"",
    );
    assert_eq!(
        of("retention.ms", &topic),
        ("604800000".into(), "DEFAULT_CONFIG".into())
    );

    // The cluster-wide default reaches every topic without its own value.
    server.ok(
        &[
            "configs",
            "alter",
            "--broker-defaults",
            "--add-config",
            "log.retention.ms=86400000",
        ],
        b"",
    );
    assert_eq!(
        of("retention.ms", &topic),
        ("86400000".into(), "DYNAMIC_DEFAULT_BROKER_CONFIG".into())
    );
    assert_eq!(
        of("log.retention.ms", &["--broker", "1"]),
        ("86400000".into(), "DYNAMIC_DEFAULT_BROKER_CONFIG".into())
    );

    // validate_only changes nothing; refusals name Kafka's error.
    server.ok(
        &[
            "configs",
            "alter",
            "--topic",
            "cfg",
            "--add-config",
            "segment.ms=1000",
            "--validate-only",
        ],
        b"",
    );
    assert_eq!(of("segment.ms", &topic).1, "DEFAULT_CONFIG");
    for (args, error) in [
        (
            vec!["--topic", "cfg", "--add-config", "segment.bytes=10"],
            "INVALID_CONFIG",
        ),
        (
            vec!["--topic", "cfg", "--add-config", "no.such.config=1"],
            "INVALID_CONFIG",
        ),
        (
            vec!["--topic", "missing", "--add-config", "retention.ms=1"],
            "UNKNOWN_TOPIC_OR_PARTITION",
        ),
        (
            vec!["--broker", "1", "--add-config", "log.retention.ms=1"],
            "INVALID_REQUEST",
        ),
    ] {
        let mut all = vec!["configs", "alter"];
        all.extend(args);
        let failed = server.kdeck(&all, b"");
        let stderr = String::from_utf8_lossy(&failed.stderr);
        assert!(!failed.status.success() && stderr.contains(error), "{all:?}: {stderr}");
    }
    assert_eq!(
        of("segment.bytes", &topic).1,
        "DEFAULT_CONFIG",
        "a refusal changes nothing"
    );
}

/// Polls `topics describe` until `done` holds (a broker's fencing and catching up take the
/// cluster's own time).
fn wait_for(server: &Server, topic: &str, done: impl Fn(&[(i32, String, String, String, String, String)]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows = describe(server, topic);
        if done(&rows) {
            return;
        }
        assert!(Instant::now() < deadline, "the cluster did not get there: {rows:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// kcat's -z: every codec the protocol has, by flag and by -X, comes back as it went in.
#[test]
fn compressed_batches_of_every_codec_round_trip() {
    let server = Server::start();
    let input: Vec<String> = (0..300)
        .map(|i| format!("record {i} {}", "abc".repeat(i % 40)))
        .collect();
    let input = input.join("\n") + "\n";
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("z-{codec}");
        server.ok(&["topics", "create", &topic, "-p", "1", "-r", "3"], b"");
        server.ok(&["produce", "-t", &topic, "-z", codec], input.as_bytes());
        let property = format!("compression.codec={codec}");
        server.ok(&["produce", "-t", &topic, "-X", &property], input.as_bytes());
        let back = server.ok(&["consume", "-t", &topic, "-e"], b"");
        assert_eq!(back, input.repeat(2), "{codec}: the records differ");
    }
    let bad = server.kdeck(&["produce", "-t", "z-none", "-z", "brotli"], b"x");
    assert_eq!(bad.status.code(), Some(2), "clap names the codecs");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("zstd"));
}

/// kcat's -D, -K, -Z and -l and FILE arguments: records of any bytes (NUL, invalid UTF-8,
/// newlines inside) go in and come out unchanged; JSON says which fields are base64.
#[test]
fn delimiters_and_raw_bytes_round_trip_unchanged() {
    let server = Server::start();
    server.ok(&["topics", "create", "bin", "-p", "1", "-r", "3"], b"");
    let records: [(&[u8], &[u8]); 4] = [
        (b"k\xff1", b"v\x00\xfe\nline two"),
        (b"\x00", b"\xc3\x28 invalid utf-8"),
        (b"plain", b"text \xe4\xbd\xa0\xe5\xa5\xbd"),
        (b"k4", b""),
    ];
    let mut input = Vec::new();
    for (key, value) in &records {
        input.extend_from_slice(key);
        input.push(0x01);
        input.extend_from_slice(value);
        input.extend_from_slice(b"|~|");
    }
    server.ok(&["produce", "-t", "bin", "-D", "|~|", "-K", "\\x01"], &input);
    let out = server.kdeck(&["consume", "-t", "bin", "-e", "-D", "|~|", "-K", "\\x01"], b"");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, input, "the same bytes out as in");

    // -f '%R%s': each value behind its length as 4 big-endian bytes.
    let out = server.kdeck(&["consume", "-t", "bin", "-e", "-f", "%R%s"], b"");
    let mut rest = out.stdout.as_slice();
    for (_, value) in &records {
        let (length, tail) = rest.split_at(4);
        let length = i32::from_be_bytes(length.try_into().expect("4 bytes"));
        assert_eq!(length as usize, value.len());
        assert_eq!(&tail[..value.len()], *value);
        rest = &tail[value.len()..];
    }
    assert!(rest.is_empty());

    // JSON: text as text, anything else as base64, named under "base64".
    let json = server.ok(&["consume", "-t", "bin", "-e", "-J"], b"");
    let objects: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).expect("json")).collect();
    assert_eq!(objects[0]["base64"], serde_json::json!(["key", "value"]));
    assert_eq!(objects[0]["value"], "dgD+CmxpbmUgdHdv");
    assert_eq!(objects[1]["key"], "\u{0}", "NUL is valid UTF-8: a JSON escape");
    assert_eq!(objects[1]["base64"], serde_json::json!(["value"]));
    assert_eq!(objects[2]["value"], "text 你好");
    assert!(objects[2].get("base64").is_none());

    // NUL-separated records holding newlines; -Z makes an empty value null.
    server.ok(&["topics", "create", "nul", "-p", "1", "-r", "3"], b"");
    server.ok(
        &["produce", "-t", "nul", "-D", "\\0", "-K", "=", "-Z"],
        b"a=one\ntwo\0b=\0\0c=three\0",
    );
    let out = server.ok(&["consume", "-t", "nul", "-e", "-f", "%k|%S|%s;"], b"");
    assert_eq!(
        out, "a|7|one\ntwo;b|-1|;c|5|three;",
        "empty records are skipped, -Z sends null"
    );

    // FILE arguments are one record each; with -l they are read as stdin.
    let dir = tempfile::tempdir().expect("temp dir");
    let (one, two) = (dir.path().join("one.bin"), dir.path().join("two.txt"));
    std::fs::write(&one, b"\x89PNG\r\n\x1a\n\x00\x00").expect("written");
    std::fs::write(&two, b"first\nsecond\n").expect("written");
    server.ok(&["topics", "create", "files", "-p", "1", "-r", "3"], b"");
    let (one, two) = (one.to_string_lossy(), two.to_string_lossy());
    server.ok(&["produce", "-t", "files", "-k", "f", &one, &two], b"");
    server.ok(&["produce", "-t", "files", "-l", &two], b"");
    let out = server.kdeck(&["consume", "-t", "files", "-e", "-f", "%k:%s\\0"], b"");
    assert_eq!(
        out.stdout,
        b"f:\x89PNG\r\n\x1a\n\x00\x00\0f:first\nsecond\n\0:first\0:second\0".to_vec()
    );
}

/// `-t` repeated, topics after the flags as kcat -G takes them, and ^patterns (in and out
/// of a group); the group commits every topic's offsets.
#[test]
fn several_topics_and_patterns_are_read_alone_and_in_a_group() {
    let server = Server::start();
    for (topic, partitions) in [("mt-a", "2"), ("mt-b", "1"), ("other", "1")] {
        server.ok(&["topics", "create", topic, "-p", partitions, "-r", "3"], b"");
        let input: String = (0..10).map(|i| format!("{topic} {i}\n")).collect();
        server.ok(&["produce", "-t", topic], input.as_bytes());
    }
    let sorted = |out: String| {
        let mut lines: Vec<String> = out.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    let expected = |topics: &[&str]| {
        let mut lines: Vec<String> = topics
            .iter()
            .flat_map(|t| (0..10).map(move |i| format!("{t} {t} {i}")))
            .collect();
        lines.sort();
        lines
    };
    let both = server.ok(&["consume", "-t", "mt-a", "-t", "mt-b", "-e", "-f", "%t %s\\n"], b"");
    assert_eq!(sorted(both), expected(&["mt-a", "mt-b"]));
    let pattern = server.ok(&["consume", "-t", "^mt-", "-e", "-f", "%t %s\\n"], b"");
    assert_eq!(sorted(pattern), expected(&["mt-a", "mt-b"]));

    let grouped = server.ok(&["consume", "-G", "pg", "^mt-.*", "-e", "-f", "%t %s\\n"], b"");
    assert_eq!(sorted(grouped), expected(&["mt-a", "mt-b"]));
    let offsets = group_offsets(&server, "pg");
    let topics: Vec<(&str, i32)> = offsets.iter().map(|(t, p, _, _)| (t.as_str(), *p)).collect();
    assert_eq!(topics, [("mt-a", 0), ("mt-a", 1), ("mt-b", 0)], "{offsets:?}");
    assert!(
        offsets.iter().all(|(_, _, committed, end)| committed == end),
        "{offsets:?}"
    );

    let positional = server.ok(&["consume", "-G", "pg2", "mt-b", "other", "-e", "-f", "%t %s\\n"], b"");
    assert_eq!(sorted(positional), expected(&["mt-b", "other"]));

    let none = server.kdeck(&["consume", "-t", "^nothing-matches", "-e"], b"");
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no topic matches"));
    let two = server.kdeck(&["consume", "-t", "mt-a", "-t", "mt-b", "-p", "0", "-e"], b"");
    assert!(String::from_utf8_lossy(&two.stderr).contains("exactly one topic"));
}

/// -X with librdkafka's names: the bootstrap, the group and where it starts, commits off,
/// acks; an unknown or misplaced property is an error naming it, before any connection.
#[test]
fn client_properties_map_onto_kdecks_settings_and_unknown_ones_are_refused() {
    let server = Server::start();
    let bootstrap = format!("bootstrap.servers={}", server.0.bootstrap);
    let home = server.0.home.path();
    let run = |args: &[&str], input: &[u8]| {
        let out = kdeck(args, input, home);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    run(&["topics", "-X", &bootstrap, "create", "xp", "-p", "1", "-r", "3"], b"");
    run(
        &[
            "produce",
            "-t",
            "xp",
            "-X",
            &bootstrap,
            "-X",
            "request.required.acks=1",
            "-X",
            "linger.ms=0",
        ],
        b"1\n2\n3\n",
    );
    // A new group told to start at the end reads nothing and commits the end.
    let latest = run(
        &[
            "consume",
            "-t",
            "xp",
            "-e",
            "-X",
            &bootstrap,
            "-X",
            "group.id=late",
            "-X",
            "auto.offset.reset=latest",
        ],
        b"",
    );
    assert_eq!(latest, "");
    assert_eq!(
        group_offsets(&server, "late"),
        [("xp".to_string(), 0, "3".to_string(), "3".to_string())]
    );
    // With enable.auto.commit=false nothing is committed.
    let read = run(
        &[
            "consume",
            "-t",
            "xp",
            "-e",
            "-X",
            &bootstrap,
            "-X",
            "group.id=nocommit",
            "-X",
            "enable.auto.commit=false",
        ],
        b"",
    );
    assert_eq!(read, "1\n2\n3\n");
    let again = run(
        &["consume", "-t", "xp", "-e", "-X", &bootstrap, "-X", "group.id=nocommit"],
        b"",
    );
    assert_eq!(again, "1\n2\n3\n", "nothing was committed, so the group starts over");
    let listed = run(
        &["list", "-X", &bootstrap, "-X", "client.id=kcat-parity", "-t", "xp"],
        b"",
    );
    assert!(listed.contains("  topic \"xp\" with 1 partition:"), "{listed}");

    let refused = |args: &[&str], what: &str| {
        let out = kdeck(args, b"", home);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(what) && !stderr.contains("bootstrap server"),
            "{args:?}: {stderr}"
        );
    };
    refused(
        &[
            "consume",
            "-t",
            "xp",
            "-b",
            "127.0.0.1:1",
            "-X",
            "fetch.error.backoff.ms=5",
        ],
        "fetch.error.backoff.ms",
    );
    refused(
        &["produce", "-t", "xp", "-b", "127.0.0.1:1", "-X", "group.id=g"],
        "consumer property",
    );
    refused(&["list", "-b", "127.0.0.1:1", "-X", "acks=all"], "producer property");
    refused(&["produce", "-t", "xp", "-b", "127.0.0.1:1", "-X", "acks=2"], "acks=2");
    let list = run(&["produce", "-X", "list", "-t", "xp"], b"");
    assert!(list.lines().any(|l| l.starts_with("compression.type ")), "{list}");
}

#[test]
fn unreachable_and_non_kafka_servers_fail_with_a_clear_message() {
    let home = tempfile::tempdir().expect("temp dir");
    // A port nobody listens on.
    let free = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let address = free.local_addr().expect("address").to_string();
    drop(free);
    let out = kdeck(&["topics", "-b", &address], b"", home.path());
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("kdeck: none of the bootstrap servers answered") && stderr.contains(&address),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());

    // A server that answers garbage to whatever it is sent.
    let garbage = TcpListener::bind("127.0.0.1:0").expect("a port");
    let address = garbage.local_addr().expect("address").to_string();
    std::thread::spawn(move || {
        for stream in garbage.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\nnot kafka at all");
            });
        }
    });
    let out = kdeck(&["topics", "-b", &address], b"", home.path());
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("kdeck: ") && stderr.contains(&address), "{stderr}");
}

#[test]
fn bad_flags_fail_before_touching_the_network() {
    let home = tempfile::tempdir().expect("temp dir");
    // Port 1 would refuse; these must not even get that far.
    let out = kdeck(
        &["consume", "-t", "t", "-p", "-1", "-b", "127.0.0.1:1"],
        b"",
        home.path(),
    );
    assert_eq!(out.status.code(), Some(2), "clap refuses a negative partition");
    let out = kdeck(
        &["consume", "-t", "t", "--from", "nonsense", "-b", "127.0.0.1:1"],
        b"",
        home.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--from \"nonsense\"") && !stderr.contains("bootstrap"),
        "{stderr}"
    );
    let out = kdeck(
        &["consume", "-t", "t", "-f", "%x", "-b", "127.0.0.1:1"],
        b"",
        home.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("%x"));
    let out = kdeck(
        &["produce", "-t", "t", "-H", "novalue", "-b", "127.0.0.1:1"],
        b"",
        home.path(),
    );
    assert_eq!(out.status.code(), Some(2), "clap refuses a header without =");
}
