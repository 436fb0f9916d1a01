#!/usr/bin/env python3
"""Where a running dispatcher's resident memory is, at its peak.

Waits for a process whose command line matches PATTERN (pgrep -f), samples its
/proc/PID/smaps every 100 ms until it exits, and prints the largest sample's
resident kB per mapping (a shared library, the executable, [heap], [anon]):

    python3 bench/rss_breakdown.py 'build-bench/dispatcher run' &
    scripts/with_postgres.sh build-bench/outbox_bench drain --rows 50000

docs/benchmarks.md quotes its output.
"""
import collections
import os
import re
import subprocess
import sys
import time


def find_pid(pattern):
    while True:
        try:
            out = subprocess.check_output(["pgrep", "-f", pattern], text=True).split()
        except subprocess.CalledProcessError:
            out = []
        pids = [int(p) for p in out if int(p) != os.getpid()]
        if pids:
            return pids[0]
        time.sleep(0.05)


def sample(pid):
    by_mapping = collections.Counter()
    name = None
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                parts = line.split()
                name = os.path.basename(parts[5]) if len(parts) > 5 else "[anon]"
            elif line.startswith("Rss:"):
                by_mapping[name] += int(line.split()[1])
    return by_mapping


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: rss_breakdown.py PATTERN")
    pid = find_pid(argv[1])
    peak = collections.Counter()
    while True:
        try:
            current = sample(pid)
        except OSError:
            break
        if sum(current.values()) > sum(peak.values()):
            peak = current
        time.sleep(0.1)
    print(f"peak RSS of pid {pid}: {sum(peak.values())} kB")
    for mapping, kb in peak.most_common(20):
        print(f"{kb:8d} kB  {mapping}")


if __name__ == "__main__":
    main(sys.argv)
