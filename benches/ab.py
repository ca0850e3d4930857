#!/usr/bin/env python3
"""The A/B guard: the same benchmarks on two builds of kdeck, alternating, N rounds.

    benches/ab.py                       # base 3ebf5ca against the working tree, 3 rounds
    benches/ab.py --base HEAD~1 --rounds 5
    benches/ab.py --head 1234abc --only serve-rf1,produce

Each revision is built with `cargo build --release --locked` in a worktree of its own under
target/ab/ (the working tree, `--head .`, builds in place), once; a later run reuses the
build while the revision's commit is the same (the working tree is always rebuilt, cargo
skips what has not changed). Then each round runs every measure on both builds, base and
head in turn, the order flipped each round so neither always runs on a warmer machine.

The measures (standard library only, so it runs wherever kdeck builds):

  serve-rf1   CPU of `kdeck serve` per record (utime + stime of the serve process from
              /proc/PID/stat, before and after) while `kdeck produce --acks 1` sends
              --records records of 100 bytes over the wire to a topic of 6 partitions, RF 1
  serve-rf3   the same with RF 3 and --acks all
  produce     `kdeck bench produce` records/s (its defaults: 5M x 100 B, RF 3, acks=all)
  engine      `kdeck bench engine --secs S` records/s
  e2e         `kdeck bench e2e --rate 500000 --linger-ms 0 --secs S` p99 latency in ms (linger.ms 0
              on both builds, as Kafka's EndToEndLatency tool sets it)
  render      `kdeck bench render` average frame in ms and idle CPU in % of a core

It prints each measure's figures per build, their medians, spread (min-max) and the ratio
head/base of the medians, with which way is better.
"""

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


def commit_of(rev):
    return run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
               capture_output=True).stdout.strip()


def build(rev):
    """The release binary of `rev` ("." is the working tree as it is)."""
    if rev == ".":
        print(f"ab: building the working tree ({commit_of('HEAD')[:9]} and its changes)", flush=True)
        run(["cargo", "build", "--release", "--locked", "--quiet"], cwd=REPO)
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        return target / "release" / "kdeck"
    sha = commit_of(rev)
    root = REPO / "target" / "ab"
    tree = root / f"tree-{sha[:12]}"
    binary = root / f"kdeck-{sha[:12]}"
    if binary.exists():
        print(f"ab: {rev} = {sha[:9]}, built before: {binary}", flush=True)
        return binary
    root.mkdir(parents=True, exist_ok=True)
    if not tree.exists():
        run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--force", str(tree), sha],
            capture_output=True)
    print(f"ab: building {rev} = {sha[:9]} in {tree}", flush=True)
    env = dict(os.environ, CARGO_TARGET_DIR=str(root / "target"))
    run(["cargo", "build", "--release", "--locked", "--quiet"], cwd=tree, env=env)
    built = root / "target" / "release" / "kdeck"
    binary.write_bytes(built.read_bytes())
    binary.chmod(0o755)
    return binary


def shown(value):
    """A figure for the table: thousands apart when large, 3 significant digits when small."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def records_file(n, size, scratch):
    path = Path(scratch) / f"records-{n}x{size}"
    if not path.exists():
        line = ("r" * (size - 1) + "\n").encode()
        with open(path, "wb") as f:
            chunk = line * 10000
            for _ in range(n // 10000):
                f.write(chunk)
            f.write(line * (n % 10000))
    return path


def serve_cpu(binary, rf, acks, records, scratch):
    """µs of `kdeck serve` CPU per record produced over the wire."""
    serve = subprocess.Popen(
        [str(binary), "serve", "--ephemeral", "--brokers", "3", "--no-demo"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        bootstrap = None
        deadline = time.monotonic() + 60
        while bootstrap is None and time.monotonic() < deadline:
            line = serve.stdout.readline()
            if not line:
                raise RuntimeError("kdeck serve ended before it listened")
            if line.startswith("bootstrap.servers="):
                bootstrap = line.strip().split("=", 1)[1].split(",")[0]
        if bootstrap is None:
            raise RuntimeError("kdeck serve did not print bootstrap.servers within 60 s")
        topic = f"ab-rf{rf}"
        run([str(binary), "topics", "create", topic, "-p", "6", "-r", str(rf), "-b", bootstrap],
            capture_output=True)
        data = records_file(records, 100, scratch)
        before = cpu_seconds(serve.pid)
        with open(data, "rb") as f:
            subprocess.run([str(binary), "produce", "-t", topic, "--acks", acks, "-b", bootstrap],
                           stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
        after = cpu_seconds(serve.pid)
        return (after - before) / records * 1e6
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()


def figures_of(binary, args, patterns):
    """The figures `kdeck bench ARGS` prints: {name: value} for each (name, regex)."""
    out = run([str(binary), "bench", *args], capture_output=True).stdout
    found = {}
    for name, pattern in patterns:
        m = re.search(pattern, out)
        if not m:
            raise RuntimeError(f"`kdeck bench {' '.join(args)}` printed no figure /{pattern}/:\n{out}")
        found[name] = float(m.group(1))
    return found


# Each figure: (name, unit, higher is better).
FIGURES = [
    ("serve-rf1", "µs CPU/record", False),
    ("serve-rf3", "µs CPU/record", False),
    ("produce", "records/s", True),
    ("engine", "records/s", True),
    ("e2e-p99", "ms", False),
    ("render-frame", "ms", False),
    ("render-idle", "% core", False),
]


def runs(opts):
    """(name, function of the binary giving {figure: value}), one process run each."""
    secs = str(opts.secs)
    return [
        ("serve-rf1", lambda b: {"serve-rf1": serve_cpu(b, 1, "1", opts.records, opts.scratch)}),
        ("serve-rf3", lambda b: {"serve-rf3": serve_cpu(b, 3, "all", opts.records, opts.scratch)}),
        ("produce", lambda b: figures_of(b, ["produce"], [("produce", r"([\d.]+) records/sec")])),
        ("engine", lambda b: figures_of(b, ["engine", "--secs", secs],
                                        [("engine", r"engine produce: .*?([\d.]+) records/sec")])),
        ("e2e", lambda b: figures_of(b, ["e2e", "--rate", "500000", "--linger-ms", "0", "--secs", secs],
                                     [("e2e-p99", r"([\d.]+) ms 99th")])),
        ("render", lambda b: figures_of(b, ["render", "--idle-secs", secs],
                                        [("render-frame", r"([\d.]+) ms avg frame"),
                                         ("render-idle", r"([\d.]+)% of one core")])),
    ]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base", default="3ebf5ca", help="base revision (default 3ebf5ca)")
    p.add_argument("--head", default=".", help="head revision ('.' = the working tree, the default)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--records", type=int, default=2_000_000, help="records per serve-CPU run")
    p.add_argument("--secs", type=float, default=5.0, help="seconds of bench engine, e2e and render idle")
    p.add_argument("--only", default="", help="comma-separated measures (default all)")
    opts = p.parse_args()
    if opts.rounds < 1:
        p.error("--rounds must be at least 1")

    chosen = runs(opts)
    if opts.only:
        wanted = set(opts.only.split(","))
        unknown = wanted - {name for name, _ in chosen}
        if unknown:
            p.error(f"unknown measure(s): {', '.join(sorted(unknown))}; "
                    f"known: {', '.join(name for name, _ in chosen)}")
        chosen = [c for c in chosen if c[0] in wanted]

    head = "HEAD" if opts.head == "." else opts.head
    names = {"base": f"{opts.base} ({commit_of(opts.base)[:9]})",
             "head": (f"the working tree ({commit_of('HEAD')[:9]} and its changes)" if opts.head == "."
                      else f"{opts.head} ({commit_of(head)[:9]})")}
    builds = {"base": build(opts.base), "head": build(opts.head)}
    figures = {}
    with tempfile.TemporaryDirectory(prefix="kdeck-ab-") as scratch:
        opts.scratch = scratch
        for r in range(opts.rounds):
            order = ["base", "head"] if r % 2 == 0 else ["head", "base"]
            for _, measure in chosen:
                for side in order:
                    for name, value in measure(builds[side]).items():
                        figures.setdefault((name, side), []).append(value)
                        print(f"round {r + 1} {name:<13} {side}: {shown(value)}", flush=True)

    print()
    print(f"base {names['base']} vs head {names['head']}, {opts.rounds} rounds alternating; "
          f"medians [min-max]")
    print(f"{'measure':<13} {'unit':<14} {'base':>26} {'head':>26} {'head/base':>10}")
    for name, unit, higher in FIGURES:
        if (name, "base") not in figures:
            continue
        cells = []
        for side in ("base", "head"):
            v = figures[(name, side)]
            cells.append(f"{shown(statistics.median(v))} [{shown(min(v))}-{shown(max(v))}]")
        base = statistics.median(figures[(name, "base")])
        ratio = statistics.median(figures[(name, "head")]) / base if base else float("nan")
        mark = "" if abs(ratio - 1) < 0.005 else (" better" if (ratio > 1) == higher else " worse")
        print(f"{name:<13} {unit:<14} {cells[0]:>26} {cells[1]:>26} {ratio:>9.3f}{mark}")


if __name__ == "__main__":
    try:
        main()
    except subprocess.CalledProcessError as e:
        sys.exit(f"ab: {' '.join(map(str, e.cmd))} failed (exit {e.returncode}): {e.stderr or ''}")
    except (RuntimeError, OSError) as e:
        sys.exit(f"ab: {e}")
