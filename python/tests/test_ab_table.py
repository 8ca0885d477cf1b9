"""scripts/ab-table: the per-cell candidate-vs-control table that decided the spin yields
(docs/results/mutex-yield-2core). It must mark a candidate better or worse only by the lab's rule
(ranges apart and Mann-Whitney p < 0.05), on each metric in its own direction, pool several files,
and refuse unreadable input with exit 2."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AB = ROOT / "scripts" / "ab-table"


def run_rec(lock, threads, ops, cpu, p99):
    return {"lock": lock, "params": {"threads": threads, "cs-ns": 1, "parallel-ratio": 0},
            "result": {"ops_per_sec": ops, "cpu_ns_per_op": cpu, "latency": {"p99_ns": p99}}}


def write(path, runs):
    path.write_text(json.dumps({"schema": "locklab-results/1", "runs": runs}))
    return str(path)


def ab(*args):
    return subprocess.run([sys.executable, str(AB), *args], capture_output=True, text=True)


def cell_line(out, threads):
    return next(l for l in out.splitlines() if l.startswith(f"({threads}, 1, 0)"))


def test_marks_follow_each_metric_direction(tmp_path):
    runs = []
    for i in range(6):
        # cell 2: cand twice the throughput, half the CPU, a tenth of the p99 - better on all three
        runs.append(run_rec("ctl", 2, 100 + i, 50 + i, 1000 + i))
        runs.append(run_rec("cand", 2, 200 + i, 25 + i, 100 + i))
        # cell 4: cand worse on all three
        runs.append(run_rec("ctl", 4, 100 + i, 50 + i, 1000 + i))
        runs.append(run_rec("cand", 4, 50 + i, 100 + i, 5000 + i))
        # cell 8: the same samples - no mark
        runs.append(run_rec("ctl", 8, 100 + i, 50, 1000))
        runs.append(run_rec("cand", 8, 100 + i, 50, 1000))
    r = ab("--control", "ctl", "--candidates", "cand", write(tmp_path / "a.json", runs))
    assert r.returncode == 0, r.stderr
    better, worse, same = (cell_line(r.stdout, t).split()[3:] for t in (2, 4, 8))
    assert [x[-1] for x in better] == ["+", "+", "+"], better
    assert [x[-1] for x in worse] == ["-", "-", "-"], worse
    assert all(x[-1].isdigit() for x in same), same
    # the ratios are median(cand) / median(ctl): 202.5 / 102.5 and 102.5 / 52.5
    assert abs(float(better[0][:-1]) - 202.5 / 102.5) < 0.01 and abs(float(worse[1][:-1]) - 102.5 / 52.5) < 0.01


def test_pools_files_and_overlap_is_not_a_verdict(tmp_path):
    # 3 repeats per file: alone too few for p < 0.05; pooled (6) enough. The overlapping pair gets "~" or nothing.
    a = [run_rec("ctl", 2, 100 + i, 50, 1000) for i in range(3)] + [run_rec("cand", 2, 200 + i, 50, 1000) for i in range(3)]
    b = [run_rec("ctl", 2, 103 + i, 50, 1000) for i in range(3)] + [run_rec("cand", 2, 203 + i, 50, 1000) for i in range(3)]
    one = ab("--control", "ctl", "--candidates", "cand", write(tmp_path / "a.json", a))
    both = ab("--control", "ctl", "--candidates", "cand", str(tmp_path / "a.json"), write(tmp_path / "b.json", b))
    assert cell_line(one.stdout, 2).split()[3][-1] != "+"
    assert cell_line(both.stdout, 2).split()[3][-1] == "+"
    o = [run_rec("ctl", 2, v, 50, 1000) for v in (100, 101, 102, 103, 104, 300)] + \
        [run_rec("cand", 2, v, 50, 1000) for v in (105, 106, 107, 108, 109, 110)]
    r = ab("--control", "ctl", "--candidates", "cand", write(tmp_path / "o.json", o))
    assert cell_line(r.stdout, 2).split()[3][-1] in "~0123456789"


def test_bad_input_exits_2(tmp_path):
    r = ab("--control", "ctl", "--candidates", "cand", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "missing.json" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "bad.json").write_text("{not json")
    r = ab("--control", "ctl", "--candidates", "cand", str(tmp_path / "bad.json"))
    assert r.returncode == 2 and "bad.json" in r.stderr
    r = ab("--control", "ctl", "--candidates", "cand", write(tmp_path / "empty.json", []))
    assert r.returncode == 2 and "no successful runs" in r.stderr


def test_reads_driver_run_records_one_per_line(tmp_path):
    """A *.jsonl file of driver run records (`locklab-bench ... >> F.jsonl`) is read as a results
    file's runs are; a line that is not an object (a driver's error text) is skipped."""
    f = tmp_path / "runs.jsonl"
    lines = [json.dumps(run_rec("ctl", 2, 100 + i, 50 + i, 1000 + i)) for i in range(6)]
    lines += [json.dumps(run_rec("cand", 2, 200 + i, 25 + i, 100 + i)) for i in range(6)]
    f.write_text("\n".join(lines[:6] + ["locklab-bench: some warning"] + lines[6:]) + "\n")
    r = ab("--control", "ctl", "--candidates", "cand", str(f))
    assert r.returncode == 0, r.stderr
    assert [x[-1] for x in cell_line(r.stdout, 2).split()[3:]] == ["+", "+", "+"]
    (tmp_path / "bad.jsonl").write_text("{broken\n")
    r = ab("--control", "ctl", "--candidates", "cand", str(tmp_path / "bad.jsonl"))
    assert r.returncode == 2 and "bad.jsonl" in r.stderr and "Traceback" not in r.stderr


def test_reads_mutex_ab_files_by_variant(tmp_path):
    """scripts/mutex-ab --out writes {"variant", "record"} lines. Its variants may all run the same
    lock with different policies (LOCKLAB_MUTEX_HANDOFF_NS=...), so the variant, not the record's
    lock, is what --control and --candidates name."""
    f = tmp_path / "ab.jsonl"
    lines = []
    for i in range(6):
        for variant, ops, cpu, p99 in (("h1ms", 100 + i, 50 + i, 1000 + i), ("h4ms", 50 + i, 100 + i, 2000 + i)):
            lines.append(json.dumps({"variant": variant, "cell": {"threads": 2},
                                     "record": run_rec("lk_mutex", 2, ops, cpu, p99)}))
    f.write_text("\n".join(lines) + "\n")
    r = ab("--control", "h1ms", "--candidates", "h4ms", str(f))
    assert r.returncode == 0, r.stderr
    assert [x[-1] for x in cell_line(r.stdout, 2).split()[3:]] == ["-", "-", "-"]
    # the record's own lock name is not a lock of this file
    r = ab("--control", "lk_mutex", "--candidates", "h4ms", str(f))
    assert r.returncode == 0 and "(2, 1, 0)" not in r.stdout


def runs_with(put, cells):
    """Six ctl and cand runs per cell, equal on the three default metrics; for each (threads,
    ctl value, cand value) of `cells`, put(result, value, i) sets the extra field of repeat i
    (a None value leaves it out, as an older record would)."""
    runs = []
    for i in range(6):
        for t, ctl_v, cand_v in cells:
            c = run_rec("ctl", t, 100 + i, 50, 1000)
            d = run_rec("cand", t, 100 + i, 50, 1000)
            for rec, v in ((c, ctl_v), (d, cand_v)):
                if v is not None:
                    put(rec["result"], v, i)
            runs += [c, d]
    return runs


def test_speed_column_compares_the_window_speed_and_says_when_it_is_missing(tmp_path):
    def put(res, v, i):
        res["window_work_speed"] = v + i / 100
    f = write(tmp_path / "a.json", runs_with(put, ((2, 1.0, 0.5), (4, None, 0.5))))
    plain = ab("--control", "ctl", "--candidates", "cand", f)
    r = ab("--speed", "--control", "ctl", "--candidates", "cand", f)
    assert plain.returncode == 0 and r.returncode == 0, r.stderr
    assert "speed" not in plain.stdout and "speed" in r.stdout.splitlines()[1]
    two = cell_line(r.stdout, 2).split()[3:]
    four = cell_line(r.stdout, 4).split()[3:]
    # cand's runs met half the control's speed: ratio (0.525 / 1.025), marked worse
    assert len(two) == 4 and two[3][-1] == "-" and abs(float(two[3][:-1]) - 0.525 / 1.025) < 0.01, two
    # the control has no window speed in cell 4 (an older record): n/a, the other metrics as before
    assert four[3] == "n/a" and len(four) == 4, four
    assert cell_line(plain.stdout, 4).split()[3:] == four[:3]


def test_thread_p99_column_compares_the_worst_threads_tail(tmp_path):
    """--thread-p99: a candidate with the same merged p99 but a worst thread ten times longer is
    marked worse there, in the metric's direction (lower is better); n/a where a record has none."""
    def put(res, v, i):
        res["latency"]["thread_p99_max_ns"] = v + i
    f = write(tmp_path / "a.json", runs_with(put, ((2, 1000, 10000), (4, None, 500))))
    r = ab("--thread-p99", "--speed", "--control", "ctl", "--candidates", "cand", f)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1].split() == ["ops/s", "cpu/op", "p99", "tp99", "speed"]
    two = cell_line(r.stdout, 2).split()[3:]
    assert two[3][-1] == "-" and abs(float(two[3][:-1]) - 10002.5 / 1002.5) < 0.01, two
    assert two[2][-1] != "-" and two[4] == "n/a", two  # same merged p99; no speed recorded
    four = cell_line(r.stdout, 4).split()[3:]
    assert four[3] == "n/a", four


def test_an_axis_the_runs_differ_in_makes_its_own_cells(tmp_path):
    """Runs that differ in groups (the yield-in-lock cells: one lock or two) are never pooled into
    one cell: the axis is added to the cell where the files' runs differ in it, and only there."""
    runs = []
    for i in range(6):
        for groups, cand_ops in ((1, 100 + i), (2, 50 + i)):
            for lock, ops in (("ctl", 100 + i), ("cand", cand_ops)):
                rec = run_rec(lock, 4, ops, 50, 1000)
                rec["params"]["groups"] = groups
                runs.append(rec)
    r = ab("--control", "ctl", "--candidates", "cand", write(tmp_path / "g.json", runs))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("cell (threads, cs-ns, parallel-ratio, groups)")
    one = next(l for l in r.stdout.splitlines() if l.startswith("(4, 1, 0, 1)")).split()[4:]
    two = next(l for l in r.stdout.splitlines() if l.startswith("(4, 1, 0, 2)")).split()[4:]
    assert one[0][-1] != "-" and two[0][-1] == "-", (one, two)
    # one groups value throughout: no groups axis
    same = [x for x in runs if x["params"]["groups"] == 1]
    r = ab("--control", "ctl", "--candidates", "cand", write(tmp_path / "s.json", same))
    assert r.stdout.startswith("cell (threads, cs-ns, parallel-ratio) ")


def test_fixed_work_runs_add_the_slowest_thread(tmp_path):
    """mutex-batch records (slowest_thread_s) add a "slow" column, lower is better; throughput-only
    files do not have it."""
    def put(res, v, i):
        res["slowest_thread_s"] = v + i / 1000
    f = write(tmp_path / "b.json", runs_with(put, ((2, 0.010, 0.030),)))
    r = ab("--thread-p99", "--control", "ctl", "--candidates", "cand", f)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1].split() == ["ops/s", "cpu/op", "p99", "slow", "tp99"]
    two = cell_line(r.stdout, 2).split()[3:]
    assert two[3][-1] == "-" and abs(float(two[3][:-1]) - 0.0325 / 0.0125) < 0.01, two
    plain = write(tmp_path / "p.json", runs_with(lambda res, v, i: None, ((2, 1, 1),)))
    assert "slow" not in ab("--control", "ctl", "--candidates", "cand", plain).stdout
