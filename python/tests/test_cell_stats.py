"""scripts/cell-stats: the per-cell medians the results docs quote (throughput, Jain, p90, p99,
p99.9, utilisation, voluntary context switches per op, parks per op), and each run's latency CDF tail. It must compute each median over the runs of the cell and lock only,
read results files and driver-run-per-line files, and refuse bad input with exit 2."""

import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CS = ROOT / "scripts" / "cell-stats"
AB1A = ROOT / "docs" / "results" / "mutex-wakebit-2core" / "ab1a.json"


def cs(*args):
    return subprocess.run([sys.executable, str(CS), *args], capture_output=True, text=True)


def rec(lock, threads, ops, jain, user, parks=None):
    res = {"ops_per_sec": ops, "fairness_jain": jain, "cpu_user_s": user, "cpu_sys_s": 0.0,
           "elapsed_s": 1.0, "latency": {"p99_ns": ops / 10, "p999_ns": ops / 5}}
    if parks is not None:
        res["lock_stats"] = {"per_op": {"mutex_park": parks}}
    return {"lock": lock, "params": {"threads": threads, "cs-ns": 100, "parallel-ratio": 10},
            "machine": {"online_cpus": 2}, "result": res}


def line(out, lock):
    return next(l for l in out.splitlines() if l.split()[:1] == [lock])


def test_medians_per_cell_and_lock_from_run_lines(tmp_path):
    f = tmp_path / "d.jsonl"
    recs = [rec("a", 8, 1e6, 0.5, 1.0, 1e-3), rec("a", 8, 3e6, 0.9, 2.0, 3e-3), rec("a", 8, 2e6, 0.7, 1.5, 2e-3),
            rec("b", 8, 9e6, 0.1, 0.2), rec("a", 16, 7e6, 0.2, 0.1)]
    f.write_text("noise line from the driver\n" + "\n".join(json.dumps(r) for r in recs) + "\n")
    r = cs("--cells", "8/100/10", str(f))
    assert r.returncode == 0, r.stderr
    a = line(r.stdout, "a")
    # medians of the three 8-thread runs of "a" only: 2M ops/s, Jain 0.7, p99 200000 ns, util 1.5/2
    assert "2.000M" in a and "jain 0.70" in a and "200,000 ns" in a and "util 0.75" in a, a
    assert "parks/op 2.0e-03" in a and "(n=3)" in a, a
    assert "parks/op" not in line(r.stdout, "b") and "16/100/10" not in r.stdout


def test_utilisation_is_of_the_cpus_the_run_could_use(tmp_path):
    """A run pinned by --cpus reports usable_cpus: 1.5 CPU-seconds in 1 s is 0.75 of the 2 online
    CPUs, but a pinned run that used 0.9 of its one CPU is at 0.90, not 0.45."""
    f = tmp_path / "d.jsonl"
    pinned = rec("p", 8, 1e6, 0.5, 0.9)
    pinned["result"]["usable_cpus"] = 1
    f.write_text(json.dumps(pinned) + "\n" + json.dumps(rec("q", 8, 1e6, 0.5, 1.5)) + "\n")
    r = cs("--cells", "8/100/10", str(f))
    assert r.returncode == 0, r.stderr
    assert "util 0.90" in line(r.stdout, "p") and "util 0.75" in line(r.stdout, "q"), r.stdout


def test_reads_a_results_file_and_filters_locks():
    r = cs("--cells", "8/100/10", "--locks", "rust_std", str(AB1A))
    assert r.returncode == 0, r.stderr
    runs = [x["result"] for x in json.loads(AB1A.read_text())["runs"]
            if x["lock"] == "rust_std" and x["params"]["threads"] == 8 and x["params"]["parallel-ratio"] == 10]
    med = statistics.median(x["ops_per_sec"] for x in runs) / 1e6
    out = line(r.stdout, "rust_std")
    assert f"{med:.3f}M" in out and f"(n={len(runs)})" in out, out
    assert "lk_mutex_v_base" not in r.stdout


def test_bad_input_exits_2(tmp_path):
    r = cs("--cells", "8/x/1", str(AB1A))
    assert r.returncode == 2 and "--cells" in r.stderr and "Traceback" not in r.stderr
    r = cs(str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "missing.json" in r.stderr and "Traceback" not in r.stderr
    r = cs("--locks", "no_such_lock", str(AB1A))
    assert r.returncode == 2 and "no successful run" in r.stderr


def test_batch_runs_show_the_time_to_finish_and_missing_fields_as_dashes(tmp_path):
    """mutex-batch records have finish_s instead of elapsed_s (utilisation is CPU over the finish
    time) and may lack a latency; neither may crash the table."""
    f = tmp_path / "b.jsonl"
    recs = []
    for fin, user in ((0.002, 0.002), (0.004, 0.004), (0.003, 0.006)):
        r = rec("a", 3, 5e7, 0.9, user)
        del r["result"]["elapsed_s"]
        r["result"]["finish_s"] = fin
        recs.append(r)
    r = rec("b", 3, 1e6, 0.5, 0.1)
    del r["result"]["elapsed_s"], r["result"]["latency"]
    recs.append(r)
    f.write_text("\n".join(json.dumps(x) for x in recs) + "\n")
    res = cs(str(f))
    assert res.returncode == 0, res.stderr
    a = line(res.stdout, "a")
    # finish medians 3 ms; utilisation medians of 0.002/(2*0.002), 0.004/(2*0.004), 0.006/(2*0.003)
    assert "finish 3.000 ms" in a and "util 0.50" in a and "(n=3)" in a, a
    b = line(res.stdout, "b")
    assert "util -" in b and "finish" not in b, b
    assert re.search(r"  p90 +- ns  p99 +- ns  p99\.9 +- ns  ", b), b


def test_p90_switches_per_op_and_the_cdf_tail(tmp_path):
    """p90 and nvcsw / total_ops are medians over the cell's runs; --tail prints each run's CDF
    points from the quantile up, in run order, and a run without a CDF says so."""
    f = tmp_path / "t.jsonl"
    recs = []
    for i, (p90, nv, ops) in enumerate(((700, 10, 1000), (900, 40, 1000), (800, 20, 1000))):
        r = rec("a", 8, 1e6, 0.9, 1.0)
        r["result"]["latency"]["p90_ns"] = p90
        r["result"]["latency"]["cdf"] = [[100, 0.5], [p90, 0.9], [50000 + i, 0.99], [90000, 1.0]]
        r["result"]["nvcsw"], r["result"]["total_ops"] = nv, ops
        recs.append(r)
    recs.append(rec("b", 8, 1e6, 0.9, 1.0))
    f.write_text("\n".join(json.dumps(x) for x in recs) + "\n")
    res = cs("--tail", "0.95", str(f))
    assert res.returncode == 0, res.stderr
    a = line(res.stdout, "a")
    assert "p90      800 ns" in a and "vcsw/op 2.0e-02" in a, a
    runs = [l.strip() for l in res.stdout.splitlines() if l.strip().startswith("run ")]
    assert runs[:3] == [f"run {i + 1}: {50000 + i:,}@0.99 90,000@1" for i in range(3)], runs
    assert runs[3] == "run 1: no latency CDF", runs
    assert "vcsw/op" not in line(res.stdout, "b")
    for bad in ("1", "-0.1", "x"):
        r = cs("--tail", bad, str(f))
        assert r.returncode == 2 and "--tail" in r.stderr and "Traceback" not in r.stderr
