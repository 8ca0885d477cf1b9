"""A stand-in for locklab-bench that speaks its three JSON documents, for CLI tests that must not depend
on the C build.  Deterministic: a run's metric is a function of its lock, threads, load and how many
times the same command ran before (read from the log), so tests can assert exact orders and known verdicts.

Environment:
    FAKE_BENCH_LOG    file that gets one JSON line (the argv) per invocation
    FAKE_BENCH_FAIL   "STATUS" or "STATUS:LOCK": a run (of LOCK) exits STATUS with a message on stderr
    FAKE_BENCH_BAD    "json": a run prints something that is not JSON
    FAKE_BENCH_ZERO   LOCK: runs of LOCK do zero operations
    FAKE_BENCH_STOP   N: the run after N measurement runs raises Ctrl-C in the parent (SIGINT to
                      the process group, as a terminal's Ctrl-C does)
    FAKE_BENCH_STOP_CHILD_ONLY  1: that run exits 130 without signalling the parent (the parent's
                      own SIGINT not handled yet when it sees the child's status: a race of real Ctrl-C)
    FAKE_BENCH_SLOW   LOCK or LOCK:N: mutex runs report 1000 ns of critical-section work by the
                      calibration (result.work.cs_busy_ns) and a reference that took 2000 ns
                      (result.cs_ns) for LOCK - a machine running at half speed - and 1000 ns for
                      every other lock; with :N, only N runs of LOCK in every N + 1 are slow (the
                      k-th run of LOCK is quiet when k is a multiple of N + 1)
    FAKE_BENCH_BUSY   file: mutex runs report result.work.busy_ns_per_iter - LOCKLAB_BUSY_NS_PER_ITER
                      when that is set, else a value that differs from run to run (as a real
                      per-process calibration may) - and append what they got in
                      LOCKLAB_BUSY_NS_PER_ITER ("-" for nothing) to the file, a line each
"""

import json
import os
import sys

DESCRIBE = {
    "schema": "locklab-describe/1",
    "workloads": [
        {"name": "mutex", "help": "fake mutex workload", "metric": "ops_per_sec",
         "higher_is_better": True,
         "params": [
             {"name": "lock", "type": "alg", "default": "lk_mutex", "min": None, "max": None,
              "choices": "mutex,spinlock", "help": "the lock", "axis": False},
             {"name": "threads", "type": "uint", "default": "1", "min": 1, "max": 4096,
              "choices": None, "help": "threads", "axis": True},
             {"name": "load", "type": "uint", "default": "0", "min": 0, "max": 1000000,
              "choices": None, "help": "pauses", "axis": True},
             {"name": "duration", "type": "double", "default": "1", "min": 0.01, "max": 3600,
              "choices": None, "help": "seconds", "axis": False},
             {"name": "warmup", "type": "double", "default": "0.1", "min": 0, "max": 60,
              "choices": None, "help": "seconds", "axis": False},
             {"name": "seed", "type": "uint", "default": "1", "min": 0, "max": 100,
              "choices": None, "help": "a param that collides with the CLI's --seed",
              "axis": False},
         ]},
        {"name": "wake", "help": "fake latency workload", "metric": "wake_ns",
         "higher_is_better": False,
         "params": [
             {"name": "lock", "type": "str", "default": None, "min": None, "max": None,
              "choices": "fast,slow", "help": "variant", "axis": False},
             {"name": "waiters", "type": "uint", "default": "4", "min": 1, "max": 64,
              "choices": None, "help": "waiters", "axis": True},
         ]},
    ],
}

LIST = {
    "schema": "locklab-list/1",
    "algorithms": [
        {"family": "mutex", "name": "lk_mutex", "opstype": "lock", "desc": "adaptive",
         "available": True, "missing": None},
        {"family": "mutex", "name": "glibc_normal", "opstype": "lock", "desc": "glibc",
         "available": True, "missing": None},
        {"family": "mutex", "name": "futex3", "opstype": "lock", "desc": "drepper",
         "available": True, "missing": None},
        {"family": "mutex", "name": "glibc_pi", "opstype": "lock", "desc": "pi",
         "available": False, "missing": "PI futexes disabled in this fake"},
        {"family": "spinlock", "name": "spin_ttas", "opstype": "lock", "desc": "ttas",
         "available": True, "missing": None},
        {"family": "refcount", "name": "ref_full", "opstype": "refcount", "desc": "refcount",
         "available": True, "missing": None},
    ],
}

# lk_mutex is clearly faster than the glibc_normal baseline; futex3 sits inside its noise
BASE = {"lk_mutex": 2.0e6, "glibc_normal": 1.0e6, "futex3": 1.0e6, "spin_ttas": 0.5e6}


def log(argv):
    """Appends argv to the log; returns how many times this exact argv ran before (the repeat)."""
    path = os.environ.get("FAKE_BENCH_LOG")
    n = 0
    line = json.dumps(argv) + "\n"
    if path:
        if os.path.exists(path):
            with open(path) as f:
                n = sum(1 for ln in f if ln == line)
        with open(path, "a") as f:
            f.write(line)
    return n


def count_runs():
    """Measurement runs logged so far (this one included)."""
    path = os.environ.get("FAKE_BENCH_LOG")
    if not path or not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(1 for ln in f if not ln.startswith(('["describe"', '["list"')))


def count_lock_runs(lock):
    """Measurement runs of LOCK logged so far (this one included)."""
    path = os.environ.get("FAKE_BENCH_LOG")
    if not path or not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(1 for ln in f if json.dumps(lock) in ln and not ln.startswith('["describe"'))


def bad(arg, what, got):
    sys.stderr.write(f"locklab-bench: --{arg}: expected {what}, got '{got}'\n")
    sys.exit(2)


def main():
    argv = sys.argv[1:]
    n = log(argv)
    if argv == ["--version"]:
        print("locklab-bench 0.0-fake (git fake, Fake)")
        return
    if argv == ["describe"]:
        print(json.dumps(DESCRIBE))
        return
    if argv == ["list", "--json"]:
        print(json.dumps(LIST))
        return
    if not argv:
        bad("workload", "a workload name", "")
    wl = next((w for w in DESCRIBE["workloads"] if w["name"] == argv[0]), None)
    if wl is None:
        bad("workload", "a workload name", argv[0])
    params = {p["name"]: p["default"] for p in wl["params"]}
    it = iter(argv[1:])
    for opt in it:
        name = opt[2:]
        if name not in params:
            bad(name, "a known option", opt)
        params[name] = next(it)
    typed = {}
    for p in wl["params"]:
        v = params[p["name"]]
        typed[p["name"]] = int(v) if p["type"] == "uint" else float(v) if p["type"] == "double" else v
    stop = os.environ.get("FAKE_BENCH_STOP")
    if stop and count_runs() > int(stop):
        import signal
        if os.environ.get("FAKE_BENCH_STOP_CHILD_ONLY") != "1":
            os.kill(os.getppid(), signal.SIGINT)
        sys.exit(130)
    fail = os.environ.get("FAKE_BENCH_FAIL")
    if fail:
        st, _, only = fail.partition(":")
        if not only or only == typed.get("lock"):
            sys.stderr.write(f"locklab-bench: fake failure for {typed.get('lock')}\n")
            sys.exit(int(st))
    if os.environ.get("FAKE_BENCH_BAD") == "json":
        print("this is not json")
        return
    jitter = 1.0 + 0.01 * (n % 5)  # repeat k of a cell and lock gets 1 + k/100
    if wl["name"] == "mutex":
        v = BASE[typed["lock"]] / (1 + typed["load"] / 100) * jitter
        dur = typed["duration"]
        ops = int(v * dur)
        if os.environ.get("FAKE_BENCH_ZERO") == typed["lock"]:  # a lock that made no progress
            v, ops = 0.0, 0
        result = {"ops_per_sec": v, "elapsed_s": dur, "total_ops": ops,
                  "cpu_ns_per_op": 1e9 / v * 2 if v else None, "fairness_jain": 0.9,
                  "nvcsw": 10, "nivcsw": 3, "uncontended_pair_ns": 12.0 * jitter,
                  "latency": {"p99_ns": 100 * jitter}, "serial_fraction": 0.5}
        slow = os.environ.get("FAKE_BENCH_SLOW")
        if slow:
            lock, _, every = slow.partition(":")
            is_slow = typed["lock"] == lock
            if is_slow and every:
                is_slow = count_lock_runs(lock) % (int(every) + 1) != 0
            result["work"] = {"cs_busy_ns": 1000.0, "parallel_busy_ns": 0.0}
            result["cs_ns"] = 2000.0 if is_slow else 1000.0
        busy_log = os.environ.get("FAKE_BENCH_BUSY")
        if busy_log:
            given = os.environ.get("LOCKLAB_BUSY_NS_PER_ITER")
            with open(busy_log, "a") as f:
                f.write((given or "-") + "\n")
            result["work"] = {"busy_ns_per_iter": float(given) if given else 0.25 + 0.01 * count_runs()}
    else:
        v = (100.0 if typed["lock"] == "fast" else 300.0) * typed["waiters"] * jitter
        result = {"wake_ns": v}
    rec = {"schema": "locklab-run/1", "workload": wl["name"], "lock": typed.get("lock"),
           "params": typed,
           "machine": {"cpu_model": "Fake CPU", "online_cpus": 2, "kernel": "6.18-fake",
                       "relax": "x86 pause", "pause_ns": 30.0},
           "driver": {"version": "0.0-fake", "commit": "fake", "build_type": "Fake"},
           "result": result}
    print(json.dumps(rec))


if __name__ == "__main__":
    main()
