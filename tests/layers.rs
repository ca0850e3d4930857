//! The house's layers, held by a test: every `crate::` path in `src/` is an arrow from the
//! room (top-level module) it is written in to the room it names. The arrows DESIGN forbids
//! are listed below as data, each with its reason; no two rooms may import each other through
//! any chain; and every room is placed in the table, so a new one has to say where it stands.
//! A module may still loop inside its own folder: only arrows between rooms count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every room of `src/`, from the ground up. `lib` and `main` are the front door: they parse
/// the command line and hand over, so they may use any room and no room uses them.
const ROOMS: &[&str] = &[
    "kafka", "out", "storage", "engine", "client", "wire", "view", "remote", "workload", "sim", "config", "cli",
    "embedded", "tui", "commands", "hub", "serve", "scenario", "record", "bench",
];

/// (room, the rooms it must not import, why).
const FORBIDDEN: &[(&str, &[&str], &str)] = &[
    (
        "kafka",
        &[
            "out", "storage", "engine", "client", "wire", "view", "remote", "workload", "sim", "config", "cli",
            "embedded", "tui", "commands", "serve", "scenario", "record", "bench",
        ],
        "Kafka's shared vocabulary is the bottom: everything may use it, it uses nothing of ours",
    ),
    (
        "out",
        &[
            "kafka", "storage", "engine", "client", "wire", "view", "remote", "workload", "sim", "config", "cli",
            "embedded", "tui", "commands", "serve", "scenario", "record", "bench",
        ],
        "stdout that stops quietly when its reader goes is a plain tool every command may use; it uses nothing of ours",
    ),
    (
        "storage",
        &[
            "kafka", "engine", "client", "wire", "view", "remote", "workload", "sim", "config", "cli", "embedded",
            "tui", "commands", "serve", "scenario", "record", "bench",
        ],
        "one replica's log on disk knows nothing of brokers, leaders, sockets or screens",
    ),
    (
        "engine",
        &[
            "client", "wire", "view", "remote", "workload", "sim", "config", "cli", "embedded", "tui", "commands",
            "serve", "scenario", "record", "bench",
        ],
        "the cluster has no UI and no TCP, and never knows who drives, shows or checks it",
    ),
    (
        "client",
        &[
            "wire", "view", "remote", "workload", "sim", "config", "cli", "embedded", "tui", "commands", "serve",
            "scenario", "record", "bench",
        ],
        "the in-process clients talk to the engine only; what uses them sits above",
    ),
    (
        "wire",
        &[
            "client", "view", "remote", "workload", "sim", "config", "cli", "embedded", "tui", "commands", "serve",
            "scenario", "record", "bench",
        ],
        "the Kafka protocol adapter stands between sockets and the engine, nothing else",
    ),
    (
        "view",
        &[
            "storage", "engine", "client", "wire", "remote", "workload", "sim", "config", "cli", "embedded", "tui",
            "commands", "serve", "scenario", "record", "bench",
        ],
        "both sources fill the view and the console reads it: it imports only Kafka's vocabulary, never the engine",
    ),
    (
        "remote",
        &[
            "storage", "engine", "client", "wire", "workload", "sim", "config", "cli", "embedded", "tui", "commands",
            "serve", "scenario", "record", "bench",
        ],
        "an external cluster is reached only through the Kafka protocol (the kafka-protocol crate); it fills the view",
    ),
    (
        "workload",
        &[
            "wire", "view", "remote", "sim", "config", "cli", "embedded", "tui", "commands", "serve", "scenario",
            "record", "bench",
        ],
        "the demo traffic is a client of the engine; the sources that run it sit above",
    ),
    (
        "sim",
        &[
            "view", "workload", "config", "cli", "embedded", "tui", "commands", "serve", "scenario", "record", "bench",
        ],
        "the simulation judges the engine from what its clients saw (in process, or over the wire protocol through \
         the remote client), apart from every console",
    ),
    (
        "config",
        &[
            "embedded", "tui", "commands", "serve", "scenario", "record", "bench", "sim", "cli",
        ],
        "the configuration is plain data; the console and the sources interpret it",
    ),
    (
        "cli",
        &["embedded", "tui", "commands", "serve", "scenario", "record", "bench"],
        "the command line's definitions are data the commands read, not the other way",
    ),
    (
        "embedded",
        &["tui", "commands", "serve", "scenario", "record", "bench", "sim"],
        "the embedded source knows no lesson, console or recording: a scenario hands it a setup and traffic",
    ),
    (
        "tui",
        &[
            "storage", "engine", "client", "wire", "remote", "workload", "sim", "embedded", "commands", "hub", "serve",
            "scenario", "record", "bench",
        ],
        "the console reads the view and config's data and drives a ClusterSource; recording observes it from outside",
    ),
    (
        "commands",
        &["embedded", "tui", "serve", "scenario", "record", "bench", "sim"],
        "the kcat-like commands are clients of a cluster, embedded or external, through the protocol",
    ),
    (
        "hub",
        &["commands", "serve", "scenario", "record", "bench", "sim"],
        "the cluster switcher starts or connects the clusters one console shows; the console asks it only by name",
    ),
    (
        "serve",
        &["tui", "commands", "scenario", "record", "bench", "sim"],
        "`kdeck serve` is the embedded cluster without a console",
    ),
    (
        "scenario",
        &["record", "commands", "serve", "bench", "sim"],
        "trainer mode plays on a source and a console; recording uses the scenario player, never the reverse",
    ),
    (
        "record",
        &["commands", "serve", "bench", "sim"],
        "record and replay observe the console and replay on a fresh cluster; nothing below needs them",
    ),
    (
        "bench",
        &["commands", "serve", "scenario", "record"],
        "benchmarks measure the rooms below; no command is built on them",
    ),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The room a file of `src/` belongs to: its first path component without `.rs`.
fn room_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap_or(file);
    let first = relative
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    first.strip_suffix(".rs").unwrap_or(&first).to_string()
}

/// The code without its comments (`//` to the end of the line, `/* */` blocks), so a doc
/// link or a sentence that names a room is no arrow.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |end| &after[end + 2..]);
        } else if rest.starts_with("//") {
            rest = rest.find('\n').map_or("", |end| &rest[end..]);
        } else if let Some(c) = rest.chars().next() {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn ident(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The rooms a `crate::` path names: `crate::engine::X` names `engine`, and
/// `crate::{engine::X, view}` names both.
fn named_rooms(code: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let line = code[..at].matches('\n').count() + 1;
        let after = &code[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let mut depth = 1;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 1 => {
                        out.push((ident(group[start..i].trim()).to_string(), line));
                        start = i + 1;
                    }
                    _ => {}
                }
                if depth == 0 {
                    out.push((ident(group[start..i].trim()).to_string(), line));
                    break;
                }
            }
        } else {
            out.push((ident(after).to_string(), line));
        }
    }
    out.retain(|(room, _)| !room.is_empty() && room != "self");
    out
}

/// Every arrow between rooms: (from, to) -> where it is written.
fn arrows() -> BTreeMap<(String, String), Vec<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut arrows: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for file in files {
        let from = room_of(&src, &file);
        if from == "lib" || from == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        for (to, line) in named_rooms(&without_comments(&text)) {
            if to != from {
                let place = format!("{}:{line}", file.strip_prefix(&src).unwrap_or(&file).display());
                arrows.entry((from.clone(), to)).or_default().push(place);
            }
        }
    }
    arrows
}

#[test]
fn no_room_imports_one_that_design_forbids() {
    let arrows = arrows();
    let mut broken = Vec::new();
    for ((from, to), places) in &arrows {
        for (room, forbidden, why) in FORBIDDEN {
            if room == from && forbidden.contains(&to.as_str()) {
                broken.push(format!("{from} -> {to} ({}): {why}", places.join(", ")));
            }
        }
    }
    assert!(broken.is_empty(), "forbidden imports:\n{}", broken.join("\n"));
}

#[test]
fn no_two_rooms_import_each_other_through_any_chain() {
    let arrows = arrows();
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to) in arrows.keys() {
        next.entry(from.as_str()).or_default().insert(to.as_str());
    }
    // A room reaches itself again only through a circle: follow arrows breadth first.
    for start in next.keys() {
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut frontier = vec![*start];
        while let Some(room) = frontier.pop() {
            for to in next.get(room).into_iter().flatten() {
                if to == start {
                    let mut circle = vec![*to, room];
                    let mut at = room;
                    while let Some(before) = came_from.get(at) {
                        circle.push(before);
                        at = before;
                    }
                    circle.reverse();
                    let places: Vec<String> = circle
                        .windows(2)
                        .map(|w| {
                            format!(
                                "{} -> {}: {:?}",
                                w[0],
                                w[1],
                                arrows[&(w[0].to_string(), w[1].to_string())]
                            )
                        })
                        .collect();
                    panic!("a circle across rooms: {}\n{}", circle.join(" -> "), places.join("\n"));
                }
                if *to != *start && !came_from.contains_key(to) {
                    came_from.insert(to, room);
                    frontier.push(to);
                }
            }
        }
    }
}

#[test]
fn every_room_is_placed_in_the_layer_table() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let rooms: BTreeSet<String> = files.iter().map(|f| room_of(&src, f)).collect();
    let unplaced: Vec<&String> = rooms
        .iter()
        .filter(|r| !ROOMS.contains(&r.as_str()) && *r != "lib" && *r != "main")
        .collect();
    assert!(
        unplaced.is_empty(),
        "rooms missing from ROOMS and FORBIDDEN: {unplaced:?}"
    );
    for (room, forbidden, _) in FORBIDDEN {
        assert!(ROOMS.contains(room), "{room} is not a room");
        for other in *forbidden {
            assert!(ROOMS.contains(other), "{room} forbids {other}, which is not a room");
        }
    }
    for room in ROOMS {
        assert!(
            FORBIDDEN.iter().any(|(r, _, _)| r == room),
            "{room} has no row in FORBIDDEN: say what it must not import"
        );
    }
}

/// The scanner itself: a grouped import names every room in it, a comment names none.
#[test]
fn the_scanner_reads_grouped_paths_and_skips_comments() {
    let code = without_comments(
        "use crate::{engine::Cluster, view::{A, B}};\n// crate::tui::App\n/* crate::record */ let x = crate::kafka::OffsetSpec::Latest;",
    );
    let rooms: Vec<String> = named_rooms(&code).into_iter().map(|(r, _)| r).collect();
    assert_eq!(rooms, vec!["engine", "view", "kafka"]);
}
