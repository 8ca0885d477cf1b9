# SPDX-License-Identifier: MIT
"""locklab-bench's argument handling and the mutex workload's output, through the real binary.

Bad input must give exit status 2 and exactly one line on stderr that names the offending argument
(never a crash, a hang or a half-written JSON object on stdout). A valid short run must print exactly
one JSON line of schema locklab-run/1 carrying every field the mutex workload promises.

The binary is $LOCKLAB_BENCH (ctest sets it), else build/locklab-bench; the tests skip without it.
"""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = Path(os.environ.get("LOCKLAB_BENCH") or ROOT / "build" / "locklab-bench")

pytestmark = pytest.mark.skipif(not BENCH.is_file() or not os.access(BENCH, os.X_OK),
                                reason=f"{BENCH} not built")

# Shortest runs the ranges allow, so the whole file takes a few seconds.
SHORT = ["--duration", "0.05", "--warmup", "0.01"]


def bench(*args, timeout=60):
    return subprocess.run([str(BENCH), *args], capture_output=True, text=True, timeout=timeout)


def available_locks(family):
    p = bench("list", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    return [a["name"] for a in doc["algorithms"]
            if a["family"] == family and a["available"] and a["opstype"] == "lock"]


@pytest.mark.parametrize("args, names", [
    (["mutex", "--lock", "futex3", "--threads", "0"], "--threads"),
    (["mutex", "--lock", "futex3", "--threads", "-1"], "--threads"),
    (["mutex", "--lock", "futex3", "--threads", "4097"], "--threads"),
    (["mutex", "--lock", "futex3", "--threads", "two"], "--threads"),
    (["mutex", "--lock", "futex3", "--load", "-5"], "--load"),
    (["mutex", "--lock", "futex3", "--lines", "1025"], "--lines"),
    (["mutex", "--lock", "futex3", "--parallel", "-1"], "--parallel"),
    (["mutex", "--lock", "futex3", "--duration", "-1"], "--duration"),
    (["mutex", "--lock", "futex3", "--duration", "nan"], "--duration"),
    (["mutex", "--lock", "futex3", "--duration", "0"], "--duration"),
    (["mutex", "--lock", "futex3", "--warmup", "-0.5"], "--warmup"),
    (["mutex", "--lock", "futex3", "--lat-every", "0"], "--lat-every"),
    (["mutex", "--lock", "no_such_lock"], "--lock"),
    (["mutex", "--lock", "futex3", "--threads"], "--threads"),
    (["mutex", "--lock", "futex3", "--bogus", "1"], "--bogus"),
    (["mutex", "--lock", "futex3", "threads", "2"], "threads"),
    (["spinlock", "--lock", "futex3"], "--lock"),  # a mutex is not a spinlock
    (["no-such-workload", "--threads", "2"], "no-such-workload"),
    (["describe", "extra"], "describe: expected no arguments, got 'extra'"),
    (["describe", "--json"], "--json: unknown option (describe takes none)"),
    (["list", "--bogus"], "--bogus: unknown option for list (known: --json)"),
    (["list", "--json", "extra"], "list: expected no arguments (only --json), got 'extra'"),
    (["--version", "extra"], "--version: expected no arguments, got 'extra'"),
])
def test_bad_input_exits_2_with_one_line(args, names):
    p = bench(*args)
    assert p.returncode == 2, (args, p.returncode, p.stderr)
    assert p.stdout == "", "nothing may reach stdout on bad input"
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert names in lines[0], lines[0]
    assert lines[0].startswith("locklab-bench: "), lines[0]


def test_version_commit_is_the_commit_it_was_built_from():
    # stamped at build time (cmake/gitcommit.cmake), not at configure time: a tree committed after its
    # last CMake configure named the older commit in every run record (stop 24's records). `make`
    # builds before it tests, so the driver under test is this checkout's HEAD; run `make build`
    # after committing if this fails outside `make check`.
    if not (ROOT / ".git").exists() or ROOT not in BENCH.resolve().parents:
        pytest.skip("the driver under test is not built from this git checkout")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True)
    if head.returncode != 0:
        pytest.skip("git cannot read this checkout")
    p = bench("--version")
    m = re.search(r"\(git ([0-9a-f]+)(-dirty)?, ", p.stdout)
    assert m, p.stdout
    assert m.group(1) == head.stdout.strip(), (p.stdout, head.stdout)


def test_gitcommit_stamp_follows_commits_and_edits(tmp_path):
    # cmake/gitcommit.cmake itself, on a scratch repository: a new commit and an edit to a tracked file
    # change the header; a run with nothing changed leaves it untouched (so nothing rebuilds)
    import shutil
    import time
    git, cmake = shutil.which("git"), shutil.which("cmake")
    if not git or not cmake:
        pytest.skip("needs git and cmake")
    repo, out = tmp_path / "repo", tmp_path / "gen" / "locklab_commit.h"
    repo.mkdir()

    def g(*a):
        return subprocess.run([git, "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *a],
                              capture_output=True, text=True, check=True).stdout.strip()

    def stamp():
        subprocess.run([cmake, f"-DSRC={repo}", f"-DOUT={out}", f"-DGIT={git}", "-P",
                        str(ROOT / "cmake" / "gitcommit.cmake")], check=True, capture_output=True)
        return re.fullmatch(r'/\*.*\*/\n#define LOCKLAB_GIT_COMMIT "(.*)"\n', out.read_text(), re.S).group(1)

    g("init", "-q")
    (repo / "f").write_text("1")
    g("add", "f")
    g("commit", "-qm", "one")
    assert stamp() == g("rev-parse", "--short=12", "HEAD")
    before = out.stat().st_mtime_ns
    time.sleep(0.05)
    assert stamp() == g("rev-parse", "--short=12", "HEAD") and out.stat().st_mtime_ns == before
    (repo / "f").write_text("2")
    assert stamp() == g("rev-parse", "--short=12", "HEAD") + "-dirty"
    g("commit", "-qam", "two")
    assert stamp() == g("rev-parse", "--short=12", "HEAD")
    # outside a checkout
    shutil.rmtree(repo / ".git")
    assert stamp() == "unknown"


def test_version_names_commit_and_build_type():
    p = bench("--version")
    assert p.returncode == 0 and p.stderr == ""
    # "unknown" outside a git checkout; a hash (maybe -dirty) inside one
    assert re.fullmatch(r"locklab-bench \d+\.\d+\.\d+ \(git ([0-9a-f]{7,}(-dirty)?|unknown), "
                        r"[A-Za-z]+( -fsanitize=\w+)?\)\n", p.stdout), p.stdout
    doc = run_ok("mutex", "--lock", "futex3", *SHORT)
    assert p.stdout.startswith(f"locklab-bench {doc['driver']['version']} "
                               f"(git {doc['driver']['commit']}, {doc['driver']['build_type']})")


def test_describe_lists_both_workloads_and_their_params():
    p = bench("describe")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    wls = {w["name"]: w for w in doc["workloads"]}
    want = {"lock", "threads", "load", "cs-ns", "lines", "parallel", "parallel-ns", "parallel-ratio",
            "groups", "cs-yield", "duration", "warmup", "lat-every", "cpus"}
    for name, families in (("mutex", "mutex,spinlock"), ("spinlock", "spinlock")):
        assert name in wls
        params = {q["name"]: q for q in wls[name]["params"]}
        assert set(params) == want
        assert params["lock"]["type"] == "alg" and params["lock"]["choices"] == families
        assert params["threads"]["min"] == 1 and params["threads"]["max"] == 4096
        assert {k for k, q in params.items() if q["axis"]} == {
            "threads", "load", "cs-ns", "lines", "parallel", "parallel-ns", "parallel-ratio", "groups",
            "cs-yield", "cpus"}
        assert params["cpus"]["type"] == "str" and params["cpus"]["default"] == "all"
        assert wls[name]["metric"] == "ops_per_sec" and wls[name]["higher_is_better"]


def run_ok(*args):
    p = bench(*args)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert len(out) == 1, "one JSON line"
    return json.loads(out[0])


PROCFS_SCHED = (Path(f"/proc/self/task/{os.getpid()}/schedstat").is_file()
                and Path(f"/proc/self/task/{os.getpid()}/sched").is_file())


@pytest.mark.parametrize("workload, extra", [
    ("spinlock", ["--duration", "0.2", "--warmup", "0.02"]),
    ("mutex-batch", ["--ops", "2000000"]),
])
def test_runqueue_wait_and_migrations(workload, extra):
    """The workers' scheduler view: with N always-runnable threads pinned to one CPU, N - 1 of them
    wait for it on average and none migrates; alone, it waits for nothing. spin_ttas's waiters
    spin and yield, never sleep, so every worker is runnable all the time."""
    lock = "spin_ttas"
    four = run_ok(workload, "--lock", lock, "--threads", "4", "--cpus", "first", *extra)["result"]
    one = run_ok(workload, "--lock", lock, "--threads", "1", "--cpus", "first", *extra)["result"]
    if not PROCFS_SCHED:  # a kernel without CONFIG_SCHED_INFO / CONFIG_SCHED_DEBUG: reported as null
        assert four["runqueue_wait_threads"] is None or four["migrations_per_s"] is None
        pytest.skip("this kernel has no /proc/.../schedstat or /proc/.../sched")
    # other processes on that CPU make every worker wait longer, never shorter: the bounds below hold
    # on a loaded machine too (checked behind two CPU hogs)
    w4, w1 = four["runqueue_wait_threads"], one["runqueue_wait_threads"]
    if workload == "spinlock":
        # the timed window: all four run throughout, three wait (alone: 2.95-3.0 here)
        assert 2.5 <= w4 <= 4.0 and w4 - w1 >= 2.0, (w4, w1)
    else:
        # a batch: each worker over its own span; those that finish first leave fewer behind
        # (2.2-2.6 here)
        assert 1.0 <= w4 <= 4.0 and w4 - w1 >= 0.8, (w4, w1)
    assert 0 <= w1 <= 1.0, w1
    assert four["migrations_per_s"] == 0 and one["migrations_per_s"] == 0


def test_valid_short_run_has_every_field():
    doc = run_ok("mutex", "--lock", "futex3", "--threads", "2", "--load", "5", "--lines", "2",
                 "--parallel=3", "--lat-every", "4", *SHORT)
    assert doc["schema"] == "locklab-run/1"
    assert doc["workload"] == "mutex" and doc["lock"] == "futex3"
    assert doc["params"]["threads"] == 2 and doc["params"]["parallel"] == 3
    r = doc["result"]
    assert r["ops_per_sec"] > 0 and r["total_ops"] > 0
    assert len(r["thread_ops"]) == 2 and sum(r["thread_ops"]) == r["total_ops"]
    assert 0.5 <= r["fairness_jain"] <= 1.0  # Jain's index lies in [1/n, 1]
    assert r["min_share"] <= 1.0 <= r["max_share"]
    for k in ("cpu_ns_per_op", "cpu_user_s", "cpu_sys_s", "elapsed_s"):
        assert r[k] >= 0, k
    assert r["nvcsw"] >= 0 and r["nivcsw"] >= 0
    for k in ("runqueue_wait_threads", "migrations_per_s"):  # null where procfs lacks them
        assert r[k] is None or r[k] >= 0, k
    lat = r["latency"]
    assert lat["samples"] > 0
    assert 0 < lat["p50_ns"] <= lat["p99_ns"] <= lat["p999_ns"] <= lat["max_ns"]
    assert r["latency_floor_ns"] >= 0  # two back-to-back clock reads; 0 only with a coarse clock
    assert r["pause_ns"] > 0 and r["cs_ns"] > 0 and r["uncontended_pair_ns"] > 0
    assert r["serial_limit_ops_per_sec"] == pytest.approx(1e9 / (r["cs_ns"] + r["uncontended_pair_ns"]))
    assert r["serial_fraction"] == pytest.approx(r["ops_per_sec"] / r["serial_limit_ops_per_sec"])
    assert r["exclusion_ok"] is True
    # the counter covers warm-up and the tail after the window, so it bounds the window's count
    assert r["exclusion_counter"] == r["exclusion_expected"] >= r["total_ops"]


@pytest.mark.parametrize("lock", ["glibc_normal", "glibc_adaptive", "glibc_pi", "futex3"])
def test_each_baseline_runs_and_excludes(lock):
    if lock not in available_locks("mutex"):
        pytest.skip(f"{lock} not in this build's registry")
    doc = run_ok("mutex", "--lock", lock, "--threads", "3", "--load", "2", *SHORT)
    assert doc["lock"] == lock
    assert doc["result"]["exclusion_ok"] is True
    assert len(doc["result"]["thread_ops"]) == 3


def test_spinlock_workload_runs_a_spinlock():
    spins = available_locks("spinlock")
    if not spins:
        pytest.skip("no spinlock in this build's registry")
    doc = run_ok("spinlock", "--lock", spins[0], "--threads", "2", *SHORT)
    assert doc["workload"] == "spinlock" and doc["result"]["exclusion_ok"] is True


def test_lat_every_is_honoured():
    # one sample per 1e9 acquisitions: a 50 ms run takes none, and the summary says so
    doc = run_ok("mutex", "--lock", "futex3", "--lat-every", "1000000000", *SHORT)
    lat = doc["result"]["latency"]
    assert lat["samples"] == 0 and "p50_ns" not in lat
    doc = run_ok("mutex", "--lock", "futex3", "--lat-every", "1", *SHORT)
    assert doc["result"]["latency"]["samples"] > 0
