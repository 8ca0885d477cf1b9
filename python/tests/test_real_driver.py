"""A short bench against the real locklab-bench (skipped when it has not been built)."""

import json
import shlex

import pytest

from conftest import real_driver
from locklab import results
from locklab.driver import Driver

DRIVER = real_driver()
pytestmark = pytest.mark.skipif(DRIVER is None, reason="locklab-bench not built (make build)")


def test_describe_and_list_schemas():
    d = Driver(DRIVER)
    assert d.describe()["schema"] == "locklab-describe/1"
    wl = d.workload("mutex")
    assert wl.metric == "ops_per_sec" and wl.param("threads").axis
    assert all({"family", "name", "available"} <= set(a) for a in d.algorithms())


def test_short_bench_results_schema(tmp_path, monkeypatch, run_cli):
    monkeypatch.setenv("LOCKLAB_BENCH", DRIVER)
    monkeypatch.chdir(tmp_path)
    d = Driver(DRIVER)
    lp = d.workload("mutex").lock_param
    avail = [a["name"] for a in d.algorithms()
             if a.get("available") and a["family"] in (lp.choices or [a["family"]])]
    locks = [n for n in ("glibc_normal", "futex3") if n in avail] or avail[:2]
    if len(locks) < 2:
        pytest.skip("fewer than two available locks")
    argv = ["bench", "mutex", "--lock", ",".join(locks), "--threads", "1,2", "--duration", "0.02",
            "--warmup", "0", "--repeat", "2", "--no-progress", "--out", "r.json"]
    rc, out, err = run_cli(*argv)
    assert rc == 0, err
    doc = results.load(tmp_path / "r.json")
    raw = json.loads((tmp_path / "r.json").read_text())
    assert raw == doc
    assert doc["command"] == shlex.join(["locklab", *argv])
    assert doc["locks"] == locks and doc["baseline"] == locks[0]
    assert doc["axes"] == {"threads": [1, 2]}
    assert doc["fixed"]["duration"] == pytest.approx(0.02) and "lock" not in doc["fixed"]
    assert {"cpu_model", "online_cpus", "kernel", "relax", "pause_ns"} <= set(doc["machine"])
    assert len(doc["runs"]) == 2 * 2 * 2
    for r in doc["runs"]:
        assert r["schema"] == "locklab-run/1" and r["workload"] == "mutex"
        assert r["lock"] in locks and r["params"]["lock"] == r["lock"]
        assert r["repeat"] in (0, 1)
        assert r["result"]["ops_per_sec"] > 0
    for cell in doc["cells"]:
        for lk in locks:
            s = cell["stats"][lk]
            assert s["n"] == 2 and s["min"] <= s["median"] <= s["max"]
            assert {"cpu_ns_per_op", "fairness_jain", "p99_ns"} <= set(s["secondary"])
        assert [c["lock"] for c in cell["comparisons"]] == locks[1:]
        assert cell["winner"] in locks
        # two repeats can never reach p < 0.05: every comparison must be a tie
        assert all(c["verdict"] == "tied" for c in cell["comparisons"])


def test_real_driver_rejects_like_the_cli(tmp_path, monkeypatch, run_cli):
    monkeypatch.setenv("LOCKLAB_BENCH", DRIVER)
    rc, out, err = run_cli("bench", "mutex", "--threads", "0", "--repeat", "1")
    assert rc == 2
    assert err.strip() == "locklab: --threads: expected an integer in [1, 4096], got '0'"
