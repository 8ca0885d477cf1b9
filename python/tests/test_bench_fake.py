"""`locklab bench` end to end against the fake driver: run order, results schema, statistics."""

import json
import os
import re
import shlex

import pytest

from locklab import results

CELL_KEYS = {"params", "stats", "comparisons", "winner", "winner_tied_with", "busy_runs",
             "judged_runs"}
STAT_KEYS = {"n", "values", "min", "median", "mean", "max", "stdev", "ci95", "secondary"}
COMP_KEYS = {"lock", "baseline", "ratio", "ratio_ci95", "mannwhitney_p", "overlap", "verdict"}


def bench(run_cli, *extra, out="r.json"):
    argv = ["bench", "mutex", "--locks", "glibc_normal,lk_mutex,futex3", "--threads", "1,2",
            "--load", "100", "--duration", "0.05", "--repeat", "4", "--seed", "3",
            "--no-progress", "--out", out, *extra]
    rc, o, e = run_cli(*argv)
    return argv, rc, o, e


def test_bench_results_file(fake_bench, run_cli, tmp_path):
    argv, rc, out, err = bench(run_cli)
    assert rc == 0, err
    doc = results.load(tmp_path / "r.json")  # validates the schema
    assert doc["schema"] == "locklab-results/1"
    assert doc["command"] == shlex.join(["locklab", *argv])
    assert doc["workload"] == "mutex" and doc["metric"] == "ops_per_sec"
    assert doc["higher_is_better"] is True
    assert doc["baseline"] == "glibc_normal"
    assert doc["locks"] == ["glibc_normal", "lk_mutex", "futex3"]
    assert doc["axes"] == {"threads": [1, 2]}
    assert doc["fixed"] == {"load": 100, "duration": 0.05, "warmup": 0.1, "seed": 1}  # the rest
    assert doc["machine"]["cpu_model"] == "Fake CPU"
    assert doc["created"].endswith("Z")
    assert len(doc["runs"]) == 2 * 4 * 3
    assert all(r["schema"] == "locklab-run/1" and "repeat" in r for r in doc["runs"])
    assert doc["status"] == "complete" and doc["planned_runs"] == 24
    assert doc["locklab"]["version"] and doc["busy_rule"].startswith("a run is busy when")
    # the machine's load around every run: load averages, involuntary switches, the verdict
    for r in doc["runs"]:
        h = r["host"]
        assert len(h["loadavg_before"]) == 3 and len(h["loadavg_after"]) == 3
        assert h["nivcsw_after"] >= h["nivcsw_before"] and h["busy"] in (True, False, None)
    for cell in doc["cells"]:
        assert cell["judged_runs"] <= 12 and cell["busy_runs"] <= cell["judged_runs"]
        assert cell["busy_runs"] == sum(1 for r in doc["runs"] if r["params"]["threads"] ==
                                        cell["params"]["threads"] and r["host"]["busy"] is True)
    assert [c["params"] for c in doc["cells"]] == [{"threads": 1}, {"threads": 2}]
    for cell in doc["cells"]:
        assert set(cell) == CELL_KEYS
        assert set(cell["stats"]) == {"glibc_normal", "lk_mutex", "futex3"}
        for s in cell["stats"].values():
            assert set(s) == STAT_KEYS
            assert s["n"] == 4 and len(s["values"]) == 4
            assert s["min"] <= s["ci95"][0] <= s["median"] <= s["ci95"][1] <= s["max"]
            assert set(s["secondary"]) == {"cpu_ns_per_op", "fairness_jain", "p99_ns",
                                           "serial_fraction"}
        comps = {c["lock"]: c for c in cell["comparisons"]}
        assert set(comps) == {"lk_mutex", "futex3"}
        for c in comps.values():
            assert set(c) == COMP_KEYS and c["baseline"] == "glibc_normal"
        # the fake makes lk_mutex 2x glibc_normal with 4% jitter, futex3 equal to it
        assert comps["lk_mutex"]["ratio"] == pytest.approx(2.0, rel=0.05)
        assert comps["lk_mutex"]["overlap"] is False
        assert comps["lk_mutex"]["verdict"] == "faster"
        assert comps["futex3"]["overlap"] is True and comps["futex3"]["verdict"] == "tied"
        assert cell["winner"] == "lk_mutex" and cell["winner_tied_with"] == []
    # the values in the cells are exactly the runs' metrics
    c0 = doc["cells"][0]
    vals = [r["result"]["ops_per_sec"] for r in doc["runs"]
            if r["lock"] == "lk_mutex" and r["params"]["threads"] == 1]
    assert sorted(c0["stats"]["lk_mutex"]["values"]) == sorted(vals)
    flat = " ".join(out.split())  # prose is wrapped at spaces to the console's width
    assert ("lk_mutex vs glibc_normal: None of the 4 lk_mutex runs falls inside glibc_normal's "
            "range [500 k, 515 k]: the slowest lk_mutex run (1.00 M) is faster than the fastest "
            "glibc_normal run.") in flat
    assert "futex3 vs glibc_normal: All 4 futex3 runs fall inside glibc_normal's range" in flat
    assert "winner: lk_mutex" in out
    assert "mutex: fixed load=100 duration=0.05 warmup=0.1 seed=1" in out

    # run order, from the driver's log: repeats outermost, cells in order, locks shuffled per cell
    runs = fake_bench.runs()
    assert len(runs) == 24
    assert [r["repeat"] for r in doc["runs"]] == [k for k in range(4) for _ in range(6)]

    def val(argv, k):
        return argv[argv.index(f"--{k}") + 1]
    assert [val(a, "threads") for a in runs] == (["1"] * 3 + ["2"] * 3) * 4
    blocks = [tuple(val(a, "lock") for a in runs[i:i + 3]) for i in range(0, 24, 3)]
    assert all(sorted(b) == ["futex3", "glibc_normal", "lk_mutex"] for b in blocks)
    assert len(set(blocks)) > 1  # shuffled


def test_no_shuffle_and_baseline(fake_bench, run_cli, tmp_path):
    rc, out, err = run_cli("bench", "mutex", "--lock", "glibc_normal,lk_mutex", "--repeat", "4",
                           "--no-shuffle", "--baseline", "lk_mutex", "--no-progress", "--out", "r.json")
    assert rc == 0, err
    locks = [a[a.index("--lock") + 1] for a in fake_bench.runs()]
    assert locks == ["glibc_normal", "lk_mutex"] * 4
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["baseline"] == "lk_mutex"
    comps = {c["lock"]: c for c in doc["cells"][0]["comparisons"]}
    assert comps["glibc_normal"]["verdict"] == "slower"
    assert comps["glibc_normal"]["ratio"] == pytest.approx(0.5, rel=0.05)


def test_lower_is_better_workload(fake_bench, run_cli, tmp_path):
    rc, out, err = run_cli("bench", "wake", "--lock", "slow,fast", "--waiters", "2",
                           "--repeat", "4", "--no-progress", "--out", "w.json")
    assert rc == 0, err
    doc = results.load(tmp_path / "w.json")
    assert doc["higher_is_better"] is False
    for cell in doc["cells"]:
        assert cell["winner"] == "fast"
        c = cell["comparisons"][0]
        assert c["lock"] == "fast" and c["verdict"] == "faster"
        assert c["ratio"] == pytest.approx(1 / 3, rel=0.05)


def test_driver_failure_keeps_what_was_measured(fake_bench, run_cli, monkeypatch, tmp_path):
    """A run that fails stops the bench with the driver's stderr; the runs before it are written,
    marked interrupted, and --resume measures only the missing ones."""
    monkeypatch.setenv("FAKE_BENCH_FAIL", "1:futex3")
    argv, rc, out, err = bench(run_cli)
    assert rc == 1
    lines = err.splitlines()
    assert lines[0] == "locklab-bench: fake failure for futex3"  # no blank line before it
    assert "--resume" in lines[-1] and "kept the" in lines[-1]
    doc = results.load(tmp_path / "r.json")
    assert doc["status"] == "interrupted" and "a run failed" in doc["status_reason"]
    first = len(doc["runs"])
    assert 0 < first < 24 and all(r["lock"] != "futex3" for r in doc["runs"])
    assert (tmp_path / "r.json.partial").exists()
    # without --resume the partial file is not overwritten
    monkeypatch.delenv("FAKE_BENCH_FAIL")
    argv, rc, out, err = bench(run_cli)
    assert rc == 2 and "r.json.partial holds the runs of an unfinished bench" in err
    before = len(fake_bench.runs())
    argv, rc, out, err = bench(run_cli, "--resume")
    assert rc == 0, err
    doc = results.load(tmp_path / "r.json")
    assert doc["status"] == "complete" and len(doc["runs"]) == 24
    assert len(fake_bench.runs()) - before == 24 - first  # only what was missing ran
    assert not (tmp_path / "r.json.partial").exists()
    assert "--resume" not in doc["command"]
    # the same schedule as an uninterrupted bench: repeats outermost, cells in order
    assert [r["repeat"] for r in doc["runs"]] == [k for k in range(4) for _ in range(6)]


def test_driver_bad_input_is_one_line(fake_bench, run_cli, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_BENCH_FAIL", "2")
    argv, rc, out, err = bench(run_cli)
    assert rc == 2 and re.fullmatch(r"locklab: fake failure for (lk_mutex|glibc_normal|futex3)\n",
                                    err), err
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "r.json.partial").exists()


def test_ctrl_c_keeps_what_was_measured(fake_bench, run_cli, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_BENCH_STOP", "5")
    argv, rc, out, err = bench(run_cli)
    assert rc == 130
    assert err.startswith("locklab: interrupted: kept the 5 of 24 runs that finished in r.json")
    doc = results.load(tmp_path / "r.json")
    assert doc["status"] == "interrupted" and len(doc["runs"]) == 5
    assert doc["status_reason"] == "interrupted (Ctrl-C)"
    rc, out, err = run_cli("show", tmp_path / "r.json")
    assert rc == 0 and "INTERRUPTED after 5 of 24 runs" in " ".join(out.split())
    monkeypatch.delenv("FAKE_BENCH_STOP")
    argv, rc, out, err = bench(run_cli, "--resume")
    assert rc == 0, err
    assert len(results.load(tmp_path / "r.json")["runs"]) == 24


def test_driver_interrupted_before_our_sigint_is_ctrl_c(fake_bench, run_cli, monkeypatch, tmp_path):
    # A terminal's Ctrl-C signals the driver and us; when the driver's exit status (130) arrives
    # before our own SIGINT is handled, the bench is still interrupted (exit 130, runs kept), not
    # failed (exit 1): the race that made test_ctrl_c_keeps_what_was_measured flaky on a loaded CI.
    monkeypatch.setenv("FAKE_BENCH_STOP", "5")
    monkeypatch.setenv("FAKE_BENCH_STOP_CHILD_ONLY", "1")
    argv, rc, out, err = bench(run_cli)
    assert rc == 130, err
    assert err.startswith("locklab: interrupted: kept the 5 of 24 runs that finished in r.json")
    assert results.load(tmp_path / "r.json")["status_reason"] == "interrupted (Ctrl-C)"


def test_resume_checks_the_plan(fake_bench, run_cli, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_BENCH_STOP", "3")
    bench(run_cli)
    monkeypatch.delenv("FAKE_BENCH_STOP")
    rc, out, err = run_cli("bench", "mutex", "--locks", "glibc_normal,lk_mutex,futex3",
                           "--threads", "1,2,4", "--load", "100", "--duration", "0.05",
                           "--repeat", "4", "--seed", "3", "--out", "r.json", "--resume")
    assert rc == 2
    assert err.startswith("locklab: --resume: r.json.partial was started with other options "
                          "(axes: {\"threads\": [1, 2]} there, {\"threads\": [1, 2, 4]} here)")
    rc, out, err = run_cli("bench", "mutex", "--out", "other.json", "--resume")
    assert rc == 2 and err == ("locklab: --resume: no partial file other.json.partial: nothing to "
                               "resume (run without --resume to start afresh)\n")
    # a partial file cut short by a killed process: its last line is ignored
    part = tmp_path / "r.json.partial"
    text = part.read_text()
    part.write_text(text + text.splitlines()[-1][:40])
    argv, rc, out, err = bench(run_cli, "--resume")
    assert rc == 0, err
    # a damaged line elsewhere is an error naming the line
    (tmp_path / "x.json.partial").write_text(text.splitlines()[0] + "\n{\"index\": \"one\"}\n"
                                             + text.splitlines()[1] + "\n")
    argv, rc, out, err = bench(run_cli, "--resume", out="x.json")
    assert rc == 2
    assert err == ("locklab: x.json.partial: line 2: at index: expected an integer, got the "
                   "string \"one\" (and 3 more problems)\n")


@pytest.mark.parametrize("out,msg", [
    ("/dev/full", "locklab: --out: '/dev/full' exists and is not a regular file"),
    ("d/file/x.json", "locklab: --out: cannot create the directory 'd/file': 'd/file' is not a "
                      "directory"),
    ("d/file/sub/x.json", "locklab: --out: cannot create the directory 'd/file/sub': 'd/file' is "
                          "not a directory"),
])
def test_out_is_checked_before_measuring(fake_bench, run_cli, tmp_path, out, msg):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "file").write_text("")
    argv, rc, o, err = bench(run_cli, out=out)
    assert rc == 2 and err == msg + "\n"
    assert fake_bench.runs() == []


def test_unwritable_out_dir(fake_bench, run_cli, tmp_path):
    if os.geteuid() == 0:
        ro = "/proc/self/r.json"  # root writes anywhere, but not into /proc
    else:
        (tmp_path / "ro").mkdir(mode=0o500)
        ro = str(tmp_path / "ro" / "r.json")
    argv, rc, o, err = bench(run_cli, out=ro)
    assert rc == 2 and err.startswith(f"locklab: {ro}.partial: --out: cannot write here: ")
    assert len(err.splitlines()) == 1 and fake_bench.runs() == []


def test_zero_operation_runs_are_flagged(fake_bench, run_cli, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_BENCH_ZERO", "futex3")
    argv, rc, out, err = bench(run_cli)
    assert rc == 0, err
    doc = results.load(tmp_path / "r.json")
    for cell in doc["cells"]:
        assert cell["stats"]["futex3"]["flags"] == ["4 of 4 runs did zero operations"]
        assert "flags" not in cell["stats"]["lk_mutex"]
    assert "futex3: 4 of 4 runs did zero operations" in " ".join(out.split())
    assert "futex3 *!" not in out and "futex3 !" in out


def test_driver_garbage(fake_bench, run_cli, monkeypatch):
    monkeypatch.setenv("FAKE_BENCH_BAD", "json")
    argv, rc, out, err = bench(run_cli)
    assert rc == 1 and "run record is not JSON" in err


def test_single_values_are_fixed_not_axes(fake_bench, run_cli, tmp_path):
    rc, out, err = run_cli("bench", "mutex", "--lock", "lk_mutex", "--threads", "2", "--repeat", "1",
                           "--param-seed", "5", "--no-progress", "--out", "s.json")
    assert rc == 0, err
    doc = results.load(tmp_path / "s.json")
    assert doc["axes"] == {}
    assert doc["fixed"]["threads"] == 2 and doc["fixed"]["seed"] == 5
    assert doc["cells"][0]["params"] == {} and doc["cells"][0]["comparisons"] == []
    assert fake_bench.runs()[0][1:] == ["--threads", "2", "--seed", "5", "--lock", "lk_mutex"]


def test_one_busy_calibration_for_the_whole_bench(fake_bench, run_cli, monkeypatch, tmp_path):
    """The first run measures the busy-loop calibration; every later run is given it, so every lock
    does the same iterations for the same ns of work (the fake's own value differs run to run)."""
    busy = tmp_path / "busy.log"
    monkeypatch.setenv("FAKE_BENCH_BUSY", str(busy))
    argv, rc, out, err = bench(run_cli)
    assert rc == 0, err
    given = busy.read_text().splitlines()
    assert len(given) == 24 and given[0] == "-"
    first = results.load(tmp_path / "r.json")["runs"]
    values = {r["result"]["work"]["busy_ns_per_iter"] for r in first}
    assert len(values) == 1, values
    assert given[1:] == [repr(values.pop())] * 23


def test_a_busy_calibration_the_user_set_is_left_alone(fake_bench, run_cli, monkeypatch, tmp_path):
    busy = tmp_path / "busy.log"
    monkeypatch.setenv("FAKE_BENCH_BUSY", str(busy))
    monkeypatch.setenv("LOCKLAB_BUSY_NS_PER_ITER", "0.4")
    argv, rc, out, err = bench(run_cli)
    assert rc == 0, err
    assert busy.read_text().splitlines() == ["0.4"] * 24


def test_resume_keeps_the_first_runs_busy_calibration(fake_bench, run_cli, monkeypatch, tmp_path):
    """A resumed bench gives its runs the calibration of the first run it kept, not a new one."""
    busy = tmp_path / "busy.log"
    monkeypatch.setenv("FAKE_BENCH_BUSY", str(busy))
    monkeypatch.setenv("FAKE_BENCH_STOP", "5")
    argv, rc, out, err = bench(run_cli)
    assert rc == 130
    monkeypatch.delenv("FAKE_BENCH_STOP")
    argv, rc, out, err = bench(run_cli, "--resume")
    assert rc == 0, err
    runs = results.load(tmp_path / "r.json")["runs"]
    assert len(runs) == 24
    assert len({r["result"]["work"]["busy_ns_per_iter"] for r in runs}) == 1
    given = busy.read_text().splitlines()
    assert given[0] == "-" and set(given[1:]) == {repr(runs[0]["result"]["work"]["busy_ns_per_iter"])}


def test_work_speed_is_recorded_and_decides_nothing(fake_bench, run_cli, monkeypatch, tmp_path):
    """A run whose reference work took twice what the calibration says (a neighbour on the host's
    core: /proc/stat shows nothing) records work_speed 0.5; the busy rule stays the CPU share."""
    monkeypatch.setenv("FAKE_BENCH_SLOW", "futex3")
    argv, rc, out, err = bench(run_cli)
    assert rc == 0, err
    doc = results.load(tmp_path / "r.json")
    for r in doc["runs"]:
        h = r["host"]
        assert h["work_speed"] == (0.5 if r["lock"] == "futex3" else 1.0)
        assert h["busy"] is not True or h["busy_why"].startswith("other processes used")
    # the bench's own output says the speed moved
    flat = " ".join(out.split())
    assert "work speed: the runs' timed work ran at 0.50-1.00x" in flat
    assert "8 of 24 runs below 0.75x" in flat
    # and says nothing when it did not
    monkeypatch.delenv("FAKE_BENCH_SLOW")
    argv, rc, out, err = bench(run_cli, out="steady.json")
    assert rc == 0 and "work speed" not in out


def _slow_is_busy(monkeypatch):
    """The busy rule, for these tests only: a run is busy when, and only when, its work speed is
    below SPEED_MIN (this machine's own load must not decide what the tests expect)."""
    from locklab import hostload
    judge = hostload.judge

    def fake_judge(before, after, rec):
        h = judge(before, after, rec)
        h.pop("busy_why", None)
        h["busy"] = h.get("work_speed", 1.0) < hostload.SPEED_MIN
        if h["busy"]:
            h["busy_why"] = f"slow: {h['work_speed']}"
        return h
    monkeypatch.setattr(hostload, "judge", fake_judge)


def test_retry_busy_measures_a_busy_run_again(fake_bench, run_cli, monkeypatch, tmp_path):
    """--retry-busy 2: a run of futex3 that was busy (two tries in three here) is measured again
    until a try is quiet, and the kept record says why the earlier ones were not kept; other locks
    run once."""
    _slow_is_busy(monkeypatch)
    monkeypatch.setenv("FAKE_BENCH_SLOW", "futex3:2")
    argv, rc, out, err = bench(run_cli, "--retry-busy", "2")
    assert rc == 0, err
    doc = results.load(tmp_path / "r.json")
    assert doc["order"]["retry_busy"] == 2 and len(doc["runs"]) == 24
    fut = [r for r in doc["runs"] if r["lock"] == "futex3"]
    assert len(fut) == 8
    for r in fut:
        assert r["host"]["work_speed"] == 1.0
        assert r["host"]["retried_why"] == ["slow: 0.5", "slow: 0.5"]
    assert all("retried_why" not in r["host"] for r in doc["runs"] if r["lock"] != "futex3")
    assert len(fake_bench.runs()) == 24 + 8 * 2


def test_retry_busy_keeps_the_last_try_when_all_are_busy(fake_bench, run_cli, monkeypatch, tmp_path):
    _slow_is_busy(monkeypatch)
    monkeypatch.setenv("FAKE_BENCH_SLOW", "futex3")
    argv, rc, out, err = bench(run_cli, "--retry-busy", "1")
    assert rc == 0, err
    doc = results.load(tmp_path / "r.json")
    for r in doc["runs"]:
        if r["lock"] == "futex3":
            assert r["host"]["busy"] is True and r["host"]["retried_why"] == ["slow: 0.5"]
    assert len(fake_bench.runs()) == 24 + 8
    # without the option nothing is measured twice, and the file says 0
    argv, rc, out, err = bench(run_cli, out="r0.json")
    assert rc == 0, err
    doc = results.load(tmp_path / "r0.json")
    assert doc["order"]["retry_busy"] == 0
    assert all("retried_why" not in r["host"] for r in doc["runs"])
    assert len(fake_bench.runs()) == 24 + 8 + 24


@pytest.mark.parametrize("bad", ["-1", "11", "x", "1.5"])
def test_retry_busy_bad_values(fake_bench, run_cli, bad):
    rc, out, err = run_cli("bench", "mutex", "--retry-busy", bad, "--out", "r.json")
    assert rc == 2 and f"--retry-busy: expected an integer in [0, 10], got '{bad}'" in err
    rc, out, err = run_cli("suite", "--retry-busy", bad, "--out", "s")
    assert rc == 2 and f"--retry-busy: expected an integer in [0, 10], got '{bad}'" in err
