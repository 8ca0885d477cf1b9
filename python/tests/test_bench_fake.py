"""`locklab bench` end to end against the fake driver: run order, results schema, statistics."""

import json
import shlex

import pytest

from locklab import results

CELL_KEYS = {"params", "stats", "comparisons", "winner", "winner_tied_with"}
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
    assert "The distributions do not overlap: the slowest lk_mutex run" in out
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


def test_driver_failure_stops_with_its_stderr(fake_bench, run_cli, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_BENCH_FAIL", "1:futex3")
    argv, rc, out, err = bench(run_cli)
    assert rc == 1
    assert "locklab-bench: fake failure for futex3" in err
    assert not (tmp_path / "r.json").exists()
    monkeypatch.setenv("FAKE_BENCH_FAIL", "2")
    argv, rc, out, err = bench(run_cli)
    assert rc == 2 and "fake failure" in err


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
