#!/usr/bin/env python3
"""Wall time of one sweep grid with 1 process and with `mpirun -np 2`, run back to back and
interleaved REPEATS times (fresh output directories each time), with the load average before each
pair, and a check that both runs stored the same table.

Also the CPU time (user + system, the process and everything it waited for) of each run, and of
the two halves `--shard 0/2` and `--shard 1/2` run one after the other: on a machine whose cores
are shared with other work the wall times say how much CPU the scheduler granted, while
CPU(1 process) / max(CPU(shard 0), CPU(shard 1)) is the speedup two dedicated cores would give
(the work split and its balance, independent of the other load).

Usage: bench/sweep/scaling.py PATH_TO_SUBEVICT [REPEATS]   (stdlib only)
"""
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time

GRID = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scaling.toml")


def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd):
    """(wall seconds, CPU seconds) of cmd."""
    c0, t0 = cpu(), time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0, cpu() - c0


def table(out):
    db = sqlite3.connect(os.path.join(out, "results.sqlite"))
    try:
        return db.execute("SELECT * FROM results ORDER BY id").fetchall()
    finally:
        db.close()


def main():
    binary = os.path.abspath(sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    one, two, model = [], [], []
    with tempfile.TemporaryDirectory() as work:
        for r in range(repeats):
            load = os.getloadavg()
            a = os.path.join(work, "one-%d" % r)
            b = os.path.join(work, "two-%d" % r)
            (w1, c1) = timed([binary, "sweep", "--config", GRID, "-o", a])
            (w2, c2) = timed(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", binary,
                              "sweep", "--config", GRID, "-o", b])
            shards = [timed([binary, "sweep", "--config", GRID, "-o", os.path.join(work, "s-%d" % r),
                             "--shard", "%d/2" % i])[1] for i in range(2)]
            one.append(w1)
            two.append(w2)
            model.append(c1 / max(shards))
            rows = table(a)
            same = rows == table(b)
            print("run %d: load average %.2f %.2f %.2f; %d jobs; wall: 1 rank %.2f s, 2 ranks %.2f s, "
                  "speedup %.2f; CPU: 1 rank %.2f s, 2 ranks %.2f s in all, shards %.2f s + %.2f s, "
                  "dedicated-core speedup %.2f; tables identical: %s"
                  % (r + 1, *load, len(rows), w1, w2, w1 / w2, c1, c2, *shards, model[-1], same),
                  flush=True)
    print("min wall: 1 rank %.2f s, 2 ranks %.2f s, speedup of the minima %.2f" % (min(one), min(two),
                                                                                  min(one) / min(two)))
    print("dedicated-core speedup (CPU model): min %.2f, max %.2f" % (min(model), max(model)))
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
