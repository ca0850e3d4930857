#!/usr/bin/env python3
"""Alternates two kdeck binaries on one bench command, ABAB..., and prints the medians of the
figures each run printed (records/sec, MB/s of the recovery scan and append), with B/A."""
import re, statistics, subprocess, sys
a, b, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
args = sys.argv[4:]
pats = {
    "records/s": r"records sent, ([\d.]+) records/sec",
    "recovery MB/s": r"storage recovery scan: .* ([\d.]+) MB/s",
    "append MB/s": r"storage append \(round 1, flush=never\): .*records/sec, ([\d.]+) MB/s",
    "read MB/s": r"storage read: .* ([\d.]+) MB/s",
    "clean open ms": r"storage clean open: \d+ bytes in ([\d.]+) ms",
}
res = {a: {}, b: {}}
for r in range(rounds):
    order = (a, b) if r % 2 == 0 else (b, a)
    for binary in order:
        out = subprocess.run([binary] + args, capture_output=True, text=True, cwd="/tmp").stdout
        for name, p in pats.items():
            m = re.search(p, out)
            if m:
                res[binary].setdefault(name, []).append(float(m.group(1)))
print(f"{' '.join(args)}; {rounds} rounds, alternating")
print(f"{'figure':<16}{'A: ' + a.split('/')[-1]:>34}{'B: ' + b.split('/')[-1]:>34}{'B/A':>8}")
for name in pats:
    if name not in res[a]:
        continue
    fa, fb = res[a][name], res[b][name]
    ma, mb = statistics.median(fa), statistics.median(fb)
    print(f"{name:<16}{f'{ma:,.1f} [{min(fa):,.0f}-{max(fa):,.0f}]':>34}{f'{mb:,.1f} [{min(fb):,.0f}-{max(fb):,.0f}]':>34}{mb/ma:>8.3f}")
