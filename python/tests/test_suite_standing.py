"""The suite summary's issue-11 sections on synthetic results whose answers are known: where the
subject is neither first nor tied (per cell and metric, each metric read through its direction),
the per-cell standing table, the CPU-per-op and uncontended targets, and the slow-path counters."""

import pytest

from locklab import suite

REPEATS = 5


def _runs(lock, params, per_repeat):
    """REPEATS run records of `lock` in the cell `params`; per_repeat(i) gives result i."""
    return [{"lock": lock, "params": {**params, "lock": lock}, "repeat": i,
             "result": per_repeat(i)} for i in range(REPEATS)]


def mutex_result(ops, p99, p999, jain, cpu=100.0, pair=4.0, tp99=None, sampled=None):
    """A run result; tp99 and sampled, when given, are the worst thread's p99 and the threads timed
    (left out, as in a results file from before the driver reported them)."""
    def res(i):
        lat = {"p99_ns": p99 + i, "p999_ns": p999 + i}
        if tp99 is not None:
            lat.update(thread_p99_max_ns=tp99 + i, threads_sampled=sampled)
        return {"ops_per_sec": ops + i, "latency": lat, "fairness_jain": jain + i / 1000,
                "cpu_ns_per_op": cpu + i, "uncontended_pair_ns": pair, "total_ops": 1000,
                "nvcsw": 10}
    return res


def mutex_doc():
    cells = [{"threads": 2}, {"threads": 32}]
    plan = {
        # lk_mutex first on throughput at 2 threads, but clearly behind glibc on p99 there
        (2, "lk_mutex"): mutex_result(100, 500, 900, 0.900),
        (2, "glibc_normal"): mutex_result(80, 300, 902, 0.901),
        (2, "rust_parking_lot"): mutex_result(99, 400, 901, 0.902),
        # at 32 threads: behind parking_lot on throughput and Jain, and twice its CPU per op; on
        # the worst thread's p99 behind parking_lot, which timed fewer threads (20 of 32)
        (32, "lk_mutex"): mutex_result(50, 200, 900, 0.50, cpu=200, pair=5.5, tp99=5000,
                                       sampled=32),
        (32, "glibc_normal"): mutex_result(20, 201, 901, 0.60, cpu=150, tp99=9000, sampled=32),
        (32, "rust_parking_lot"): mutex_result(80, 202, 902, 0.90, pair=3.5, tp99=3000,
                                               sampled=20),
    }
    runs = []
    for (t, lock), res in plan.items():
        runs += _runs(lock, {"threads": t}, res)
    return {"workload": "mutex", "metric": "ops_per_sec", "higher_is_better": True,
            "locks": ["lk_mutex", "glibc_normal", "rust_parking_lot"], "baseline": "glibc_normal",
            "machine": {"online_cpus": 2}, "fixed": {}, "axes": {"threads": [2, 32]},
            "runs": runs, "cells": [{"params": c, "stats": {}} for c in cells],
            "command": "locklab bench mutex ...", "subject": "lk_mutex"}


def test_standing_reads_each_metric_through_its_direction():
    doc = mutex_doc()
    two = suite.cell_results(doc, doc["cells"][0])
    s = suite.standing(two, "ops_per_sec", "lk_mutex")
    assert s["place"] == "first" and s["winner"] == "lk_mutex"
    assert s["other"] == "rust_parking_lot" and s["ratio"] == pytest.approx(102 / 101)
    # lower is better for latency: lk_mutex's 502 ns p99 loses to glibc's 302
    s = suite.standing(two, "p99_ns", "lk_mutex")
    assert s["place"] == "behind" and s["winner"] == "glibc_normal"
    assert s["ratio"] == pytest.approx(502 / 302) and s["p"] < 0.05
    lo, hi = s["ratio_ci95"]
    assert lo <= 502 / 302 <= hi
    # 900..904 against 901..906: ranges overlap, so tied whatever the medians say
    s = suite.standing(two, "p999_ns", "lk_mutex")
    assert s["place"] in ("first", "tied")
    thirty = suite.cell_results(doc, doc["cells"][1])
    s = suite.standing(thirty, "ops_per_sec", "lk_mutex")
    assert s["place"] == "behind" and s["other"] == "rust_parking_lot"
    assert s["ratio"] == pytest.approx(52 / 82)
    assert suite.standing(thirty, "ops_per_sec", "no_such_lock") is None
    assert suite.standing(thirty, "finish_s", "lk_mutex") is None  # no run reports it
    with pytest.raises(ValueError):
        suite.standing(thirty, "bogus_metric", "lk_mutex")


def test_losses_name_every_cell_where_the_subject_is_neither_first_nor_tied():
    text = "\n".join(suite.standing_md(mutex_doc(), "lk_mutex"))
    assert "### Where lk_mutex is neither first nor tied" in text
    # 4 metrics at 2 threads (no worst-thread p99 reported there), 5 at 32
    assert "4 of 9 (cell, metric) pairs." in text
    # split into the issue's targets (throughput, p99) and what is reported beside them
    targets, beside = text.split("On the issue's targets")[1].split("Reported beside them")
    assert targets.count("| threads=") == 2 and "| Jain fairness |" not in targets
    assert "worst thread's p99" not in targets
    assert beside.startswith(": 2:") and beside.count("| threads=32 | Jain fairness |") == 1
    loss_rows = [ln for ln in text.splitlines()
                 if ln.startswith("| threads=") and "x [" in ln and ln.count("|") == 9]
    got = {(ln.split(" | ")[0][2:], ln.split(" | ")[1], ln.split(" | ")[2]) for ln in loss_rows}
    assert got == {("threads=2", "p99 latency", "glibc_normal"),
                   ("threads=32", "throughput", "rust_parking_lot"),
                   ("threads=32", "Jain fairness", "rust_parking_lot"),
                   ("threads=32", "worst thread's p99", "rust_parking_lot")}
    # the worst-thread row says how many threads each lock timed, and marks the lock ahead that
    # timed fewer: its worst thread is the worst of fewer threads
    tp = next(ln for ln in loss_rows if "worst thread's p99" in ln)
    assert "| 5,002 | 3,002 | 1.67x [" in tp, tp
    assert tp.endswith("| 0.90 / 0.50; throughput 1.58x; threads timed 20 / 32 fewer |"), tp  # 82 / 52
    assert "In 1 of the 1 worst-thread p99 rows the lock ahead timed acquisitions in fewer" in text
    thr = next(ln for ln in loss_rows if ln.split(" | ")[1] == "throughput")
    assert "0.63x [" in thr  # 52 / 82
    # the fairness column: parking_lot's Jain 0.90 against lk_mutex's 0.50, no min share reported
    assert thr.endswith("| 0.90 / 0.50 |")
    # glibc's p99 lead at 2 threads is not bought with fairness (Jain 0.90 both): no `*`, no note;
    # it is bought with throughput (80 against lk_mutex's 100): marked as slower
    p99 = next(ln for ln in loss_rows if "p99 latency" in ln)
    assert p99.endswith("| 0.90 / 0.90; throughput 0.80x slower |")
    assert "latency rows the lock ahead is less fair" not in text
    # the per-cell table carries every metric for every cell
    assert ("| cell | throughput | p99 latency | p99.9 latency | worst thread's p99 | "
            "Jain fairness |") in text
    # a file without the per-thread field reads "-" there, and is not judged on it
    assert "| threads=2 | first (1.01x rust_parking_lot) | **behind glibc_normal: 1.66x** [" in text
    row2 = next(ln for ln in text.splitlines() if ln.startswith("| threads=2 | first"))
    assert row2.split(" | ")[4] == "-", row2
    assert "| threads=2 | first (1.01x rust_parking_lot) | **behind glibc_normal: 1.66x**" in text


def test_no_losses_is_said_in_words():
    doc = mutex_doc()
    doc["runs"] = [r for r in doc["runs"] if r["params"]["threads"] == 2 and
                   r["lock"] != "glibc_normal"]
    doc["cells"] = doc["cells"][:1]
    for r in doc["runs"]:  # parking_lot's p99 as lk_mutex's: nothing left that lk_mutex loses
        r["result"]["latency"]["p99_ns"] = 500 + r["repeat"]
    text = "\n".join(suite.standing_md(doc, "lk_mutex"))
    assert "None: lk_mutex is first or tied with the winner in all 4 (cell, metric) pairs." in text


def test_batch_losses_use_time_to_finish_lower_is_better():
    def res(fin):
        return lambda i: {"finish_s": fin + i / 100, "slowest_thread_s": fin + i / 100,
                          "fairness_jain": 1.0, "latency": {"p99_ns": 100, "p999_ns": 200}}
    runs = (_runs("lk_mutex", {"threads": 4}, res(2.0)) +
            _runs("glibc_normal", {"threads": 4}, res(1.0)))
    doc = {"workload": "mutex-batch", "locks": ["lk_mutex", "glibc_normal"], "runs": runs,
           "cells": [{"params": {"threads": 4}, "stats": {}}]}
    text = "\n".join(suite.standing_md(doc, "lk_mutex"))
    assert "| threads=4 | time to finish | glibc_normal | 2.02 | 1.02 | 1.98x [" in text
    assert "| threads=4 | slowest thread | glibc_normal |" in text
    assert "2 of 5 (cell, metric) pairs." in text
    assert "Reported beside them: 1:" in text  # the slowest thread; time to finish is a target


def test_batch_losses_whose_threads_started_far_apart_are_named():
    def res(fin, skew):
        return lambda i: {"finish_s": fin + i / 100, "slowest_thread_s": fin + i / 100,
                          "start_skew_s": skew, "fairness_jain": 1.0,
                          "latency": {"p99_ns": 100, "p999_ns": 200}}
    # threads=32: skews 1.0 s of ~2.0 and 0.5 of ~1.0: half the time (named);
    # threads=4: 0.2 of ~2.0 and 0.1 of ~1.0: a tenth (not named); both are losses
    runs = (_runs("lk_mutex", {"threads": 32}, res(2.0, 1.0)) +
            _runs("glibc_normal", {"threads": 32}, res(1.0, 0.5)) +
            _runs("lk_mutex", {"threads": 4}, res(2.0, 0.2)) +
            _runs("glibc_normal", {"threads": 4}, res(1.0, 0.1)))
    doc = {"workload": "mutex-batch", "locks": ["lk_mutex", "glibc_normal"], "runs": runs,
           "cells": [{"params": {"threads": 32}, "stats": {}}, {"params": {"threads": 4}, "stats": {}}]}
    text = "\n".join(suite.standing_md(doc, "lk_mutex"))
    assert "| threads=32 | time to finish | glibc_normal |" in text
    assert "| threads=4 | time to finish | glibc_normal |" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("Start-up:"))
    assert "in 1 of these cells" in line and "threads=32 (49% with glibc_normal)" in line
    assert "threads=4" not in line
    # a timed-window workload never gets the note, whatever its results hold
    assert "Start-up:" not in "\n".join(suite.standing_md(mutex_doc(), "lk_mutex"))
    assert suite.start_share({"a": [{"finish_s": 0, "start_skew_s": 1}]}, ["a"]) is None


def test_start_up_note_names_each_lock_ahead_when_a_cell_loses_to_two():
    """Behind glibc_normal on the time to finish and behind futex3 on the slowest thread: the note
    gives the share over lk_mutex's runs and each of theirs, naming both (it named one before)."""
    def res(fin, slow, skew):
        return lambda i: {"finish_s": fin + i / 100, "slowest_thread_s": slow + i / 100,
                          "start_skew_s": skew, "fairness_jain": 1.0,
                          "latency": {"p99_ns": 100, "p999_ns": 200}}
    runs = (_runs("lk_mutex", {"threads": 32}, res(2.0, 2.0, 1.0)) +
            _runs("glibc_normal", {"threads": 32}, res(1.0, 1.9, 0.5)) +
            _runs("futex3", {"threads": 32}, res(1.5, 1.0, 0.3)))
    doc = {"workload": "mutex-batch", "locks": ["lk_mutex", "glibc_normal", "futex3"], "runs": runs,
           "cells": [{"params": {"threads": 32}, "stats": {}}]}
    text = "\n".join(suite.standing_md(doc, "lk_mutex"))
    assert "| threads=32 | time to finish | glibc_normal |" in text
    assert "| threads=32 | slowest thread | futex3 |" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("Start-up:"))
    assert "in 1 of these cells" in line
    assert "threads=32 (49% with glibc_normal, " in line and "% with futex3)" in line


def test_issue11_targets_cpu_at_oversubscription_and_uncontended_pair():
    text = "\n".join(suite.issue11_targets_md(mutex_doc(), "lk_mutex"))
    # only threads=32 is oversubscribed on 2 CPUs; lk_mutex 202 ns against parking_lot's 102
    # 200..204 against 1.10 x 100..104: ranges apart, p = 0.008: beyond the spread
    assert "not met in 1 of 1 cells; 1 of them beyond the spread" in text
    assert "threads=32: 202 ns against rust_parking_lot's 102 (1.98x [" in text
    assert "within the spread" not in text
    # the file's medians: lk_mutex 4.75 (5 runs at 4.0, 5 at 5.5), fastest peer 3.75
    assert "lk_mutex 4.8 ns, fastest peer rust_parking_lot 3.8 ns: met (+1.0 ns)" in text
    assert suite.issue11_targets_md({**mutex_doc(), "workload": "spinlock"}, "lk_mutex") == []


def test_issue11_cpu_target_counts_threads_against_the_cpus_the_runs_could_use():
    """A pinned run (--cpus: usable_cpus 1 on a 2-CPU machine) is oversubscribed at 2 threads."""
    doc = mutex_doc()
    doc["runs"] = [r for r in doc["runs"] if r["params"]["threads"] == 2]
    doc["cells"] = doc["cells"][:1]
    assert "met in all 0 cells" in "\n".join(suite.issue11_targets_md(doc, "lk_mutex"))
    for r in doc["runs"]:
        r["result"]["usable_cpus"] = 1
    text = "\n".join(suite.issue11_targets_md(doc, "lk_mutex"))
    assert "more threads than CPUs (1)" in text and "met in all 1 cells." in text


def test_issue11_cpu_target_miss_within_the_spread_is_told_apart():
    """A median 1.27x the peer's whose runs straddle 1.10x the peer's (as CPU per op does where the
    work outside the lock dominates) is listed, and said to be within the spread; one whose runs all
    lie beyond it is not."""
    doc = mutex_doc()
    spread = [300.0, 100.0, 130.0, 280.0, 120.0]  # median 130 against parking_lot's 102: 1.27x
    for r in doc["runs"]:
        if r["params"]["threads"] == 32 and r["lock"] == "lk_mutex":
            r["result"]["cpu_ns_per_op"] = spread[r["repeat"]]
    text = "\n".join(suite.issue11_targets_md(doc, "lk_mutex"))
    assert "not met in 1 of 1 cells; 0 of them beyond the spread" in text
    assert "threads=32: 130 ns against rust_parking_lot's 102 (1.27x [" in text
    assert text.rstrip().count("; within the spread)") == 1
    # the same median with every run beyond 1.10x the peer's is a firm miss
    for r in doc["runs"]:
        if r["params"]["threads"] == 32 and r["lock"] == "lk_mutex":
            r["result"]["cpu_ns_per_op"] = 128.0 + r["repeat"]
    text = "\n".join(suite.issue11_targets_md(doc, "lk_mutex"))
    assert "1 of them beyond the spread" in text and "within the spread)" not in text


def test_counters_table_only_with_a_statistics_build():
    doc = mutex_doc()
    assert suite.counters_md(doc, "lk_mutex") == []  # no lock_stats at all: nothing to say
    for r in doc["runs"]:
        if r["lock"] == "lk_mutex":
            r["result"]["lock_stats"] = {"enabled": False, "build": "cmake -DLOCKLAB_STATS=ON"}
    assert "not counted by this build" in "\n".join(suite.counters_md(doc, "lk_mutex"))
    for r in doc["runs"]:
        if r["lock"] == "lk_mutex":
            r["result"]["lock_stats"] = {
                "enabled": True, "ops": 1000, "mutex_spin_start": 400, "mutex_spin_success": 300,
                "mutex_park": 100, "mutex_wake": 90, "mutex_handoff": 5, "mutex_timeout": 0,
                "per_op": {"mutex_spin_start": 0.4, "mutex_spin_success": 0.3,
                           "mutex_park": 0.1, "mutex_wake": 0.09, "mutex_handoff": 0.005,
                           "mutex_timeout": 0, "mutex_spin_ns_lost": 180.5, "mutex_spin_yield": 0.3,
                           "mutex_spin_ask": 0.02, "mutex_spin_handed": 0.015}}
    text = "\n".join(suite.counters_md(doc, "lk_mutex"))
    assert ("| cell | spins/op | parks/op | wakes/op | handoffs/op | timeouts/op | spin ns lost/op "
            "| spin yields/op | asks/op | handed/op | spin success |") in text
    assert "| threads=2 | 0.4 | 0.1 | 0.09 | 0.005 | 0 | 180.5 | 0.3 | 0.02 | 0.015 | 0.75 | 0.01 | 102 |" in text
    # a build that did not count an event (an older library) shows "-" for it, not 0
    for r in doc["runs"]:
        if r["lock"] == "lk_mutex":
            del r["result"]["lock_stats"]["per_op"]["mutex_spin_yield"]
    text = "\n".join(suite.counters_md(doc, "lk_mutex"))
    assert "| threads=2 | 0.4 | 0.1 | 0.09 | 0.005 | 0 | 180.5 | - | 0.02 | 0.015 | 0.75 | 0.01 | 102 |" in text


def test_tied_with_a_wide_winner_but_clearly_worse_than_the_runner_up_is_behind():
    # the winner's runs spread from 10 to 1000 (median 200): every lock ties with it. rust_std's
    # 150-154 and lk_mutex's 100-104 do not overlap: lk_mutex is behind rust_std, not tied
    wide = [10, 200, 200, 1000, 1000]
    runs = (_runs("glibc_normal", {"threads": 8}, lambda i: {"ops_per_sec": wide[i]})
            + _runs("rust_std", {"threads": 8}, lambda i: {"ops_per_sec": 150 + i})
            + _runs("lk_mutex", {"threads": 8}, lambda i: {"ops_per_sec": 100 + i}))
    by_lock = suite.cell_results({"runs": runs}, {"params": {"threads": 8}})
    s = suite.standing(by_lock, "ops_per_sec", "lk_mutex")
    assert s["winner"] == "glibc_normal" and s["place"] == "behind" and s["other"] == "rust_std"
    assert s["ratio"] == pytest.approx(102 / 152)
    # rust_std itself is tied with the winner and worse than nobody
    s = suite.standing(by_lock, "ops_per_sec", "rust_std")
    assert s["place"] == "tied" and s["other"] == "glibc_normal"


def test_sched_view_where_behind_on_throughput():
    doc = mutex_doc()
    assert suite.sched_view_md(doc, "lk_mutex") == []  # no run reports the scheduler's view
    for r in doc["runs"]:
        res = r["result"]
        res.update({"elapsed_s": 1.0, "cpu_user_s": 0.5, "cpu_sys_s": 0.25,
                    "runqueue_wait_threads": 1.5 + r["repeat"] / 100, "migrations_per_s": 300.0})
        if r["lock"] == "rust_parking_lot":
            res.update({"cpu_user_s": 1.5, "cpu_sys_s": 0.5, "runqueue_wait_threads": 30.0,
                        "migrations_per_s": 2.0})
    text = "\n".join(suite.sched_view_md(doc, "lk_mutex"))
    # behind rust_parking_lot on throughput at 32 threads only (first at 2)
    assert "| threads=32 | rust_parking_lot | 0.75 / 2 | 1.52 / 30 | 300 / 2 |" in text
    assert "threads=2 |" not in text
    # first everywhere: the section says so
    for r in doc["runs"]:
        if r["lock"] == "lk_mutex":
            r["result"]["ops_per_sec"] += 1000
    assert "behind on throughput in no cell" in "\n".join(suite.sched_view_md(doc, "lk_mutex"))


def test_a_latency_lead_of_a_less_fair_lock_is_marked():
    """glibc's p99 lead at 2 threads comes with a Jain index of 0.5 and a thread that did nothing:
    the row is marked and a sentence counts such rows."""
    doc = mutex_doc()
    for r in doc["runs"]:
        if r["params"]["threads"] == 2 and r["lock"] == "glibc_normal":
            r["result"]["fairness_jain"] = 0.5 + r["repeat"] / 1000
            r["result"]["min_share"] = 0.0
        elif r["params"]["threads"] == 2 and r["lock"] == "lk_mutex":
            r["result"]["min_share"] = 0.8
    text = "\n".join(suite.standing_md(doc, "lk_mutex"))
    p99 = next(ln for ln in text.splitlines() if ln.startswith("| threads=2 | p99 latency |"))
    assert p99.endswith("| 0.50 (0.00) / 0.90 (0.80) *; throughput 0.80x slower |")
    assert "In 1 of the 2 latency rows the lock ahead is less fair than lk_mutex" in text
    # a Jain loss is not a latency row, and the throughput row's lock ahead is fairer: no mark
    thr = next(ln for ln in text.splitlines() if ln.startswith("| threads=32 | throughput |"))
    assert not thr.endswith("* |")


def test_noise_scale_from_the_one_thread_cells():
    # two 1-thread cells: lk_mutex at 90 % and 100 % of the best lock's median; a 2-thread cell
    # (not counted) where it is far behind
    plan = {(1, 1, "lk_mutex"): 90, (1, 1, "rust_std"): 100, (1, 2, "lk_mutex"): 200,
            (1, 2, "rust_std"): 150, (2, 1, "lk_mutex"): 10, (2, 1, "rust_std"): 100}
    runs = []
    for (t, w, lock), ops in plan.items():
        runs += _runs(lock, {"threads": t, "cs-ns": w},
                      mutex_result(ops * 10 - 2, 100, 100, 1.0))  # median ops * 10
    cells = [{"params": {"threads": t, "cs-ns": w}, "stats": {}} for t, w in ((1, 1), (1, 2), (2, 1))]
    doc = {"workload": "mutex", "locks": ["lk_mutex", "rust_std"], "runs": runs, "cells": cells}
    lo, hi, n = suite.one_thread_scale(doc, "lk_mutex", "ops_per_sec")
    assert n == 2 and lo == pytest.approx(900 / 1000) and hi == 1.0
    text = "\n".join(suite.standing_md(doc, "lk_mutex"))
    assert "Noise scale: at 1 thread" in text and "reads 0.90-1.00x the best lock's in the 2 cells" in text
    # lower is better (time to finish): 1.0 s against the best 0.8 s reads 0.80x
    batch = [*_runs("lk_mutex", {"threads": 1, "cs-ns": 1}, lambda i: {"finish_s": 1.0}),
             *_runs("glibc_normal", {"threads": 1, "cs-ns": 1}, lambda i: {"finish_s": 0.8}),
             *_runs("lk_mutex", {"threads": 1, "cs-ns": 2}, lambda i: {"finish_s": 0.5}),
             *_runs("glibc_normal", {"threads": 1, "cs-ns": 2}, lambda i: {"finish_s": 0.6})]
    bdoc = {"workload": "mutex-batch", "runs": batch,
            "cells": [{"params": {"threads": 1, "cs-ns": w}} for w in (1, 2)]}
    assert suite.one_thread_scale(bdoc, "lk_mutex", "finish_s") == (pytest.approx(0.8), 1.0, 2)
    # one 1-thread cell only, or none: no sentence
    doc["cells"] = cells[1:]
    assert suite.one_thread_scale(doc, "lk_mutex", "ops_per_sec") is None
    assert "Noise scale" not in "\n".join(suite.standing_md(doc, "lk_mutex"))


def test_a_latency_lead_of_a_slower_lock_is_marked():
    """glibc's p99 lead at 2 threads comes with 0.80x lk_mutex's throughput there (80 against 100,
    ranges apart): the row is marked and a sentence counts such rows; the throughput row is not a
    latency row and gets no mark. A latency lead of a lock as fast as the subject is not marked."""
    text = "\n".join(suite.standing_md(mutex_doc(), "lk_mutex"))
    p99 = next(ln for ln in text.splitlines() if ln.startswith("| threads=2 | p99 latency |"))
    assert p99.endswith("; throughput 0.80x slower |")
    assert "In 1 of the " in text and "latency rows the lock ahead is slower than lk_mutex" in text
    thr = next(ln for ln in text.splitlines() if ln.startswith("| threads=32 | throughput |"))
    assert "slower" not in thr
    # glibc as fast as lk_mutex at 2 threads (same ops): its p99 lead is no longer marked
    doc = mutex_doc()
    for r in doc["runs"]:
        if r["params"]["threads"] == 2 and r["lock"] == "glibc_normal":
            r["result"]["ops_per_sec"] = 100 + r["repeat"]
    text = "\n".join(suite.standing_md(doc, "lk_mutex"))
    p99 = next(ln for ln in text.splitlines() if ln.startswith("| threads=2 | p99 latency |"))
    assert p99.endswith("; throughput 1.00x |")
    assert "latency rows the lock ahead is slower" not in text


def test_a_batch_latency_lead_of_a_lock_that_finishes_later_is_marked():
    """mutex-batch: speed is time to finish, lower is better. glibc's p99 lead comes with about twice
    lk_mutex's time to finish: marked as slower on time to finish."""
    runs = [*_runs("lk_mutex", {"threads": 4}, lambda i: {"finish_s": 1.0 + i / 100,
                                                          "latency": {"p99_ns": 500 + i}}),
            *_runs("glibc_normal", {"threads": 4}, lambda i: {"finish_s": 2.0 + i / 100,
                                                              "latency": {"p99_ns": 100 + i}})]
    doc = {"workload": "mutex-batch", "locks": ["lk_mutex", "glibc_normal"], "runs": runs,
           "cells": [{"params": {"threads": 4}, "stats": {}}]}
    text = "\n".join(suite.standing_md(doc, "lk_mutex"))
    p99 = next(ln for ln in text.splitlines() if ln.startswith("| threads=4 | p99 latency |"))
    assert p99.endswith("; time to finish 1.98x slower |")  # medians 2.02 / 1.02


def test_chance_of_a_mark_is_bounded_by_the_orders_of_the_runs():
    """Where every lock's runs come from one distribution, the subject is marked behind another lock
    only when all its runs lie on the worse side: 1 order in C(n + m, n), counted where that order's
    Mann-Whitney p passes 0.05 (5 and 5 runs: 1 in 252; 3 and 3: p = 0.1, never), summed over the
    other locks; the summary states the sum over its pairs."""
    doc = mutex_doc()
    two = suite.cell_results(doc, doc["cells"][0])
    assert suite.chance_of_mark(two, "ops_per_sec", "lk_mutex") == pytest.approx(2 / 252)
    assert suite.chance_of_mark(two, "ops_per_sec", "no_such_lock") == 0
    # 5 runs against 4: 2 / C(9, 4) = 0.016 passes, 1 order in 126; against 3: 2 / C(8, 3) = 0.036
    # passes, 1 in 56; 3 against 3: 2 / 20 does not
    uneven = {"lk_mutex": two["lk_mutex"], "glibc_normal": two["glibc_normal"][:4],
              "rust_parking_lot": two["rust_parking_lot"][:3]}
    assert suite.chance_of_mark(uneven, "ops_per_sec", "lk_mutex") == pytest.approx(1 / 126 + 1 / 56)
    three = {lk: rs[:3] for lk, rs in two.items()}
    assert suite.chance_of_mark(three, "ops_per_sec", "lk_mutex") == 0
    # a lock without the metric adds nothing: only lk_mutex and parking_lot report a worst thread
    thirty = suite.cell_results(doc, doc["cells"][1])
    for r in thirty["glibc_normal"]:
        del r["latency"]["thread_p99_max_ns"]
    assert suite.chance_of_mark(thirty, "thread_p99_max_ns", "lk_mutex") == pytest.approx(1 / 252)
    # the summary: 4 targeted pairs (throughput and p99 in both cells) at 2 / 252 each, and 5 others
    # (p99.9 and Jain in both cells, the worst thread at 32 threads only)
    text = "\n".join(suite.standing_md(mutex_doc(), "lk_mutex"))
    assert ("up to 0.0 of the 4 pairs on the issue's targets and 0.0 of the other 5 could be marked "
            "by chance alone") in text, text
    # 108 cells: the wide matrix's scale, 6.0 of 216 with 8 locks of 5 runs
    many = {"workload": "mutex", "locks": ["lk_mutex", "glibc_normal", "rust_parking_lot"],
            "runs": [], "cells": []}
    for t in range(60):
        for lock, base in (("lk_mutex", 100), ("glibc_normal", 200), ("rust_parking_lot", 300)):
            many["runs"] += _runs(lock, {"threads": t + 1}, mutex_result(base, base, base, 0.5))
        many["cells"].append({"params": {"threads": t + 1}})
    text = "\n".join(suite.standing_md(many, "lk_mutex"))
    assert "up to 1.0 of the 120 pairs on the issue's targets and 1.0 of the other 120" in text, text
