# SPDX-License-Identifier: MIT
"""Issue 11's wider mutex workloads through the real locklab-bench: work in ns (calibrated busy loop),
outside work as a multiple of the critical section, and the fixed-work mode (mutex-batch).

Nothing here is timed pass/fail: the runs are tiny and the assertions are about counts, formulas and
the fields' presence, never about how fast anything was.
"""
import json
import os
import subprocess

import pytest

from test_driver_args import BENCH, SHORT, bench, run_ok as run_doc

pytestmark = pytest.mark.skipif(not BENCH.is_file() or not os.access(BENCH, os.X_OK),
                                reason=f"{BENCH} not built")


def run_ok(*args):
    return run_doc(*args)["result"]


@pytest.mark.parametrize("args, names", [
    (["mutex", "--cs-ns", "-1"], "--cs-ns"),
    (["mutex", "--cs-ns", "10000001"], "--cs-ns"),
    (["mutex", "--cs-ns", "1.5"], "--cs-ns"),
    (["mutex", "--parallel-ns", "x"], "--parallel-ns"),
    (["mutex", "--parallel-ratio", "1001"], "--parallel-ratio"),
    (["mutex", "--parallel-ratio", "-1"], "--parallel-ratio"),
    (["spinlock", "--parallel-ratio", "ten"], "--parallel-ratio"),
    (["mutex-batch", "--ops", "0"], "--ops"),
    (["mutex-batch", "--ops", "1000000001"], "--ops"),
    (["mutex-batch", "--total-ops", "-3"], "--total-ops"),
    (["mutex-batch", "--timeout", "0"], "--timeout"),
    (["mutex-batch", "--timeout", "inf"], "--timeout"),
    (["mutex-batch", "--threads", "0"], "--threads"),
    (["mutex-batch", "--duration", "1"], "--duration"),  # a batch has no window
    (["mutex-batch", "--lock", "spinlock_that_is_not"], "--lock"),
    (["mutex", "--groups", "0"], "--groups"),
    (["mutex", "--groups", "4097"], "--groups"),
    (["mutex-batch", "--groups", "two"], "--groups"),
    (["mutex", "--cs-yield", "2"], "--cs-yield"),
    (["spinlock", "--cs-yield", "-1"], "--cs-yield"),
    (["mutex", "--cpus", "x"], "--cpus"),
    (["mutex", "--cpus", "1-0"], "--cpus"),
    (["mutex", "--cpus", "0-"], "--cpus"),
    (["mutex", "--cpus", "-1"], "--cpus"),
    (["spinlock", "--cpus", "99999"], "--cpus"),
    (["mutex-batch", "--cpus", "1023"], "--cpus"),  # a CPU this machine does not have
])
def test_bad_values_exit_2_with_one_line(args, names):
    p = bench(*args)
    assert p.returncode == 2, (args, p.returncode, p.stderr)
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and names in lines[0] and lines[0].startswith("locklab-bench: "), lines


def test_cli_rejects_bad_wide_values_before_running(run_cli, monkeypatch):
    monkeypatch.setenv("LOCKLAB_BENCH", str(BENCH))
    rc, _, err = run_cli("bench", "mutex", "--parallel-ratio", "0,1,10,5000", "--repeat", "1")
    assert rc == 2
    assert err.strip() == "locklab: --parallel-ratio: expected an integer in [0, 1000], got '5000'"
    rc, _, err = run_cli("bench", "mutex-batch", "--ops", "0", "--repeat", "1")
    assert rc == 2 and "--ops" in err


def test_work_in_ns_reports_its_calibration():
    r = run_ok("mutex", "--lock", "futex3", "--threads", "2", "--cs-ns", "200", "--parallel-ns",
               "300", *SHORT)
    w = r["work"]
    per = w["busy_ns_per_iter"]
    assert per > 0 and "best of" in w["busy_calibration"]
    # ns are rounded to whole turns of the calibrated loop
    assert w["cs_busy_iters"] == round(200 / per)
    assert w["parallel_busy_iters"] == round(300 / per)
    assert w["cs_busy_ns"] == pytest.approx(w["cs_busy_iters"] * per)
    assert w["cs_pauses"] == 0 and w["parallel_pauses"] == 0 and w["parallel_ratio"] == 0
    assert r["parallel_ns"] > 0 and r["exclusion_ok"] is True


def test_pause_only_run_skips_the_calibration():
    r = run_ok("mutex", "--lock", "futex3", "--load", "3", "--parallel", "4", *SHORT)
    w = r["work"]
    assert w["busy_ns_per_iter"] is None
    assert w["cs_pauses"] == 3 and w["parallel_pauses"] == 4
    assert w["cs_busy_iters"] == 0 and w["parallel_busy_iters"] == 0


def test_parallel_ratio_adds_a_multiple_of_the_critical_section():
    r = run_ok("mutex", "--lock", "futex3", "--load", "5", "--cs-ns", "50", "--parallel", "7",
               "--parallel-ns", "20", "--parallel-ratio", "10", *SHORT)
    w = r["work"]
    per = w["busy_ns_per_iter"]
    assert w["cs_pauses"] == 5
    assert w["parallel_pauses"] == 7 + 10 * 5
    assert w["parallel_busy_iters"] == round(20 / per) + 10 * w["cs_busy_iters"]
    assert w["parallel_ratio"] == 10


def test_batch_one_thread_slowest_is_the_total():
    r = run_ok("mutex-batch", "--lock", "futex3", "--threads", "1", "--ops", "5000")
    assert r["completed"] is True and r["batch_ok"] is True
    assert r["thread_ops"] == [5000] and r["total_ops"] == 5000 and r["ops_per_thread"] == 5000
    assert r["finish_s"] > 0
    assert r["slowest_thread_s"] == r["finish_s"] == r["fastest_thread_s"] == r["thread_time_s"][0]
    assert r["thread_time_spread"] == 0 and r["start_skew_s"] == 0
    assert r["ops_per_sec"] == pytest.approx(5000 / r["finish_s"])
    assert r["exclusion_counter"] == 5000


@pytest.mark.parametrize("lock", ["lk_mutex", "futex3"])
def test_batch_counts_exactly_t_times_n(lock):
    t, n = 5, 3000
    r = run_ok("mutex-batch", "--lock", lock, "--threads", str(t), "--ops", str(n), "--cs-ns", "20")
    assert r["completed"] is True and r["batch_ok"] is True and r["exclusion_ok"] is True
    assert r["thread_ops"] == [n] * t
    assert sum(r["thread_ops"]) == r["total_ops"] == r["exclusion_counter"] == t * n
    times = r["thread_time_s"]
    assert len(times) == t and all(x > 0 for x in times)
    assert r["slowest_thread_s"] == max(times) and r["fastest_thread_s"] == min(times)
    assert r["thread_time_spread"] == pytest.approx((max(times) - min(times)) / max(times))
    # the span runs from the first start to the last end: no thread's own time exceeds it
    assert r["slowest_thread_s"] <= r["finish_s"]
    assert 1 / t - 1e-9 <= r["fairness_jain"] <= 1 + 1e-9
    assert r["latency"]["samples"] > 0


@pytest.mark.parametrize("lock", ["lk_mutex", "glibc_normal"])
def test_waits_that_straddle_the_window_opening_are_latency_samples(lock):
    # 16 threads, 10 ms critical sections, nothing outside, every acquisition timed, a 10 ms
    # window. When the window opens one thread holds the lock and the other 15 wait, each since
    # before the window. At most a few critical sections end inside the window, so only a few
    # waits can begin there: the rule that counted only those gave 0-2 samples here. Each of the
    # 15 waits overlaps the window and is a sample, however long it lasted; a lock that starves a
    # thread through the whole window is charged for it.
    t = 16
    r = run_ok("mutex", "--lock", lock, "--threads", str(t), "--cs-ns", "10000000", "--lat-every",
               "1", "--warmup", "0.05", "--duration", "0.01")
    assert r["exclusion_ok"] is True
    lat = r["latency"]
    assert lat["samples"] >= t - 1, lat
    # the waits that began before the window lasted at least until it opened: at least one critical
    # section, 10 ms of calibrated work, for the last of the 15 to be served (the first can be short)
    assert lat["max_ns"] >= 10_000_000 * (t - 2) / 2, lat


def test_thread_p99_is_each_threads_own_tail():
    # One thread: its own p99 is the run's.
    lat = run_ok("mutex", "--lock", "glibc_normal", "--threads", "1", "--cs-ns", "100", "--lat-every", "1",
                 *SHORT)["latency"]
    assert lat["threads_sampled"] == 1, lat
    assert lat["thread_p99_max_ns"] == lat["thread_p99_median_ns"] == lat["p99_ns"], lat
    # Four threads (on a loaded machine a thread can miss a short window entirely: at least one has
    # samples). The largest thread p99 is never below the merged p99 (if each thread had fewer than
    # its 1 % of samples at or above a value, the merged samples would too) nor above the largest
    # sample, and the median is at most the largest.
    lat = run_ok("mutex", "--lock", "glibc_normal", "--threads", "4", "--cs-ns", "100", *SHORT)["latency"]
    assert 1 <= lat["threads_sampled"] <= 4, lat
    assert lat["thread_p99_median_ns"] <= lat["thread_p99_max_ns"] <= lat["max_ns"], lat
    assert lat["thread_p99_max_ns"] >= lat["p99_ns"], lat


def _calibrated(env_value, *args):
    env = dict(os.environ, LOCKLAB_BUSY_NS_PER_ITER=str(env_value))
    p = subprocess.run([str(BENCH), *args], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["result"]


@pytest.mark.parametrize("work", [["--cs-ns", "2000", "--parallel-ratio", "0"],   # timed inside
                                  ["--cs-ns", "100", "--parallel-ratio", "10"]])  # timed outside
def test_window_work_speed_follows_the_work_against_its_calibration(work):
    # The driver times its busy loops in the window and reports due / taken. Told that a turn of
    # the loop takes a quarter of what it does, it runs four times the turns for each due ns: the
    # speed must read about 0.25 (the histogram's floor, ~0.26). Told four times, a quarter of the
    # turns: about 4 (its top, ~3.9). This machine's speed moves within about 2x, and so does the
    # calibration a process takes at start-up (a best of 21 can land in a slow phase), hence the
    # factor of 4 and the bounds at 0.75 and 1.5 (a factor of 2 read 0.86 once here).
    args = ["mutex", "--lock", "lk_mutex", "--threads", "2", *work, "--duration", "0.1",
            "--warmup", "0.02"]
    true_ns = run_ok(*args)["work"]["busy_ns_per_iter"]
    slow = _calibrated(true_ns / 4, *args)
    fast = _calibrated(true_ns * 4, *args)
    for r in (slow, fast):
        # every 64th operation is timed: ~90 loops in the slowest case here (8 us critical sections)
        assert r["window_work_samples"] > 20, r
        assert 0 <= r["window_work_slow_share"] <= 1
    assert slow["window_work_speed"] < 0.75, slow["window_work_speed"]
    assert slow["window_work_slow_share"] > 0.5
    assert fast["window_work_speed"] > 1.5, fast["window_work_speed"]


@pytest.mark.parametrize("work", [["--cs-ns", "1", "--parallel-ratio", "10"],     # too short
                                  ["--load", "100", "--parallel-ratio", "1"],     # pauses: no due
                                  ["--cs-ns", "500", "--parallel-ratio", "0"]])   # under 1 us inside
def test_window_work_speed_is_null_where_nothing_is_timed(work):
    r = run_ok("mutex", "--lock", "futex3", "--threads", "2", *work, *SHORT)
    assert r["window_work_speed"] is None and r["window_work_slow_share"] is None
    assert r["window_work_samples"] == 0


@pytest.mark.parametrize("lock", ["lk_mutex", "futex3"])
def test_groups_split_the_threads_over_their_own_locks(lock):
    # 5 threads on 3 locks: threads 0 and 3 on the first, 1 and 4 on the second, 2 alone on the
    # third. Each lock's counter must equal its own threads' operations (exclusion_ok checks them
    # one by one), so a worker and a check that disagree on how many threads share a lock fail here
    # (the next test, with more locks than threads, catches a mapping that keeps the sizes but not
    # the threads: tried with thread i on lock i * N / T).
    t, n = 5, 2000
    r = run_ok("mutex-batch", "--lock", lock, "--threads", str(t), "--ops", str(n), "--groups", "3",
               "--cs-yield", "1")
    assert r["completed"] is True and r["batch_ok"] is True and r["exclusion_ok"] is True
    assert r["thread_ops"] == [n] * t and r["exclusion_counter"] == t * n
    assert r["work"]["groups"] == 3 and r["work"]["cs_yield"] is True


def test_groups_and_cs_yield_default_to_one_lock_and_no_yield():
    r = run_ok("mutex", "--lock", "futex3", "--threads", "2", *SHORT)
    assert r["work"]["groups"] == 1 and r["work"]["cs_yield"] is False and r["exclusion_ok"] is True
    # more groups than threads: the idle locks count nothing and the check still holds
    r = run_ok("mutex", "--lock", "lk_mutex", "--threads", "2", "--groups", "4", "--cs-yield", "1",
               *SHORT)
    assert r["work"]["groups"] == 4 and r["exclusion_ok"] is True
    assert r["exclusion_counter"] == r["exclusion_expected"] > 0


def test_batch_total_ops_splits_over_threads():
    r = run_ok("mutex-batch", "--lock", "futex3", "--threads", "3", "--total-ops", "1000",
               "--ops", "7")
    assert r["ops_per_thread"] == 334  # ceil(1000 / 3): --total-ops overrides --ops
    assert r["thread_ops"] == [334] * 3 and r["batch_ok"] is True


def test_batch_timeout_fails_with_the_partial_record():
    p = bench("mutex-batch", "--lock", "futex3", "--threads", "2", "--ops", "1000000000",
              "--cs-ns", "1000", "--timeout", "0.1")
    assert p.returncode == 1
    assert "--timeout" in p.stderr and "did not finish" in p.stderr
    r = json.loads(p.stdout)["result"]
    assert r["completed"] is False and r["batch_ok"] is False
    # stopped early, but what it did was counted and mutually exclusive
    assert 0 < r["total_ops"] < 2 * 10**9 and r["exclusion_ok"] is True


def test_lock_stats_field_says_what_the_build_counts():
    r = run_ok("mutex", "--lock", "lk_mutex", "--threads", "2", *SHORT)
    ls = r["lock_stats"]
    if ls["enabled"]:
        assert ls["ops"] == r["exclusion_expected"]
        assert set(ls["per_op"]) <= set(ls)
    else:
        assert "LOCKLAB_STATS" in ls["build"]
    # a lock that does not count has no such field
    assert "lock_stats" not in run_ok("mutex", "--lock", "futex3", *SHORT)


def test_busy_calibration_given_by_the_environment(monkeypatch):
    """LOCKLAB_BUSY_NS_PER_ITER replaces the start-up calibration (locklab bench shares one that
    way); the iteration counts follow it, and the record says where the value came from."""
    monkeypatch.setenv("LOCKLAB_BUSY_NS_PER_ITER", "0.5")
    r = run_ok("spinlock", "--lock", "spin_ttas", "--threads", "1", "--cs-ns", "10",
               "--parallel-ratio", "3", *SHORT)
    w = r["work"]
    assert w["busy_ns_per_iter"] == 0.5 and "LOCKLAB_BUSY_NS_PER_ITER" in w["busy_calibration"]
    assert w["cs_busy_iters"] == 20 and w["parallel_busy_iters"] == 60


@pytest.mark.parametrize("value", ["abc", "0", "-1", "1e9", "0.5x"])
def test_bad_busy_calibration_exits_2_with_one_line(monkeypatch, value):
    monkeypatch.setenv("LOCKLAB_BUSY_NS_PER_ITER", value)
    for args in (["mutex", "--lock", "futex3", "--cs-ns", "10"], ["mutex", "--lock", "futex3"]):
        p = bench(*args, *SHORT)
        assert p.returncode == 2 and p.stdout == "", (args, p.returncode, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "LOCKLAB_BUSY_NS_PER_ITER" in lines[0] and f"'{value}'" in lines[0]


def test_cpus_pins_the_run_and_says_how_many_it_could_use():
    """--cpus N is taskset -c N, and first is the lowest CPU the run may use: the run reports one
    usable CPU; the default leaves the affinity it was started with."""
    first = min(os.sched_getaffinity(0))
    assert run_ok("mutex", "--threads", "2", *SHORT, "--cpus", "first")["usable_cpus"] == 1
    assert run_ok("mutex", "--threads", "2", *SHORT, "--cpus", str(first))["usable_cpus"] == 1
    assert run_ok("mutex-batch", "--threads", "2", "--ops", "100", "--cpus",
                  f"{first}-{first}")["usable_cpus"] == 1
    doc = run_doc("spinlock", "--threads", "2", *SHORT)
    assert doc["params"]["cpus"] == "all"
    assert doc["result"]["usable_cpus"] == len(os.sched_getaffinity(0))
