"""scripts/across-runs and locklab.across: the subject's standing lined up across results files, on
synthetic files whose answers are known, and the script on a real record and on bad input."""

import os
import subprocess
import sys

import pytest

from locklab import across
from locklab.errors import UsageError

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "across-runs")
REAL = os.path.join(ROOT, "docs", "results", "issue11-2core-stale-spinner", "control-2us.json")


def doc(plan, fixed=None, created="2026-11-27T00:00:00Z"):
    """A mutex results doc: plan {(threads, lock): (ops, p99)}, 5 runs each with small spread (ops
    may also be the list of the 5 runs' values)."""
    runs, cells = [], []
    for (t, lock), (ops, p99) in plan.items():
        if {"threads": t} not in cells:
            cells.append({"threads": t})
        runs += [{"lock": lock, "params": {"threads": t, "lock": lock}, "repeat": i,
                  "result": {"ops_per_sec": ops[i] if isinstance(ops, list) else ops + i, "latency": {"p99_ns": p99 + i, "p999_ns": 1000},
                             "fairness_jain": 0.9}} for i in range(5)]
    return {"workload": "mutex", "locks": sorted({lk for _, lk in plan}), "created": created,
            "locklab": {"commit": "abc"}, "machine": {"cpu_model": "X", "online_cpus": 2},
            "fixed": fixed or {"duration": 0.2}, "runs": runs,
            "cells": [{"params": c, "stats": {}} for c in cells]}


def plan(behind_at_2, behind_at_8):
    # threads 2 and 8: lk_mutex behind rust_std on throughput when asked; at 4 never behind
    return {(2, "lk_mutex"): (50 if behind_at_2 else 100, 300), (2, "rust_std"): (80, 300),
            (4, "lk_mutex"): (100, 300), (4, "rust_std"): (80, 300),
            (8, "lk_mutex"): (50 if behind_at_8 else 100, 300), (8, "rust_std"): (80, 300)}


def test_cells_behind_in_every_file_are_told_from_those_behind_in_some():
    a, b = doc(plan(True, True)), doc(plan(True, False))
    text = "\n".join(across.across_md([a, b], ["a.json", "b.json"], "lk_mutex"))
    assert "3 cells in every file." in text
    # throughput: 2 threads behind in both, 8 threads in one, 4 threads in none; p99 all tied
    assert "| throughput | 1 | 1 | 1 | 0 | 1 |" in text
    assert "| p99 latency | 0 | 0 | 3 | 0 | 0 |" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| threads=")]
    assert len(rows) == 2
    assert rows[0].startswith("| threads=2 | throughput | 2 of 2 | yes |")
    assert rows[1].startswith("| threads=8 | throughput | 1 of 2 | no |")
    assert rows[1].count("**behind rust_std") == 1 and "first (" in rows[1]
    assert "threads=4" not in text.split("### Cells where")[1]
    # the ratio is the subject's median over the winner's: 52 / 82
    assert "0.63x" in rows[0]


def test_missing_cells_and_differing_fixed_parameters_are_said():
    a = doc(plan(True, True))
    b = doc({k: v for k, v in plan(True, True).items() if k[0] != 8}, fixed={"duration": 0.5})
    text = "\n".join(across.across_md([a, b], ["a.json", "b.json"], "lk_mutex"))
    assert "2 cells in every file; 1 cells left out (not in every file)." in text
    assert "- fixed parameter `duration` differs: F1 0.2, F2 0.5" in text
    assert "threads=8" not in text


def test_a_metric_no_file_reports_is_not_judged_not_counted_as_a_tie():
    a, b = doc(plan(False, False)), doc(plan(False, False))
    text = "\n".join(across.across_md([a, b], ["a", "b"], "lk_mutex", all_metrics=True))
    assert "| Jain fairness | 0 | 0 | 3 | 0 | 0 |" in text
    assert "lk_mutex is behind in no cell of any file, and no median is 10% worse" in text


def test_a_median_worse_in_every_file_is_listed_though_every_verdict_is_a_tie():
    # 2 threads: medians 85 against 100 in both files, but the ranges overlap (tied); 8 threads:
    # 95 against 100 (not 10% worse); 4 threads: worse in one file only
    wide, close = [60, 85, 85, 85, 200], [50, 95, 95, 95, 200]
    base = {(t, "rust_std"): ([100] * 5, 300) for t in (2, 4, 8)}
    a = doc({**base, (2, "lk_mutex"): (wide, 300), (4, "lk_mutex"): (wide, 300),
             (8, "lk_mutex"): (close, 300)})
    b = doc({**base, (2, "lk_mutex"): (wide, 300), (4, "lk_mutex"): (close, 300),
             (8, "lk_mutex"): (close, 300)})
    text = "\n".join(across.across_md([a, b], ["a", "b"], "lk_mutex"))
    assert "| throughput | 0 | 0 | 3 | 0 | 1 |" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| threads=")]
    assert len(rows) == 1 and rows[0].startswith("| threads=2 | throughput | 0 of 2 | yes |")
    assert rows[0].count("tied (0.85x rust_std)") == 2


@pytest.mark.parametrize("docs, names, subject, needle", [
    ([doc(plan(1, 1))], ["a"], "lk_mutex", "at least two results files"),
    ([doc(plan(1, 1)), dict(doc(plan(1, 1)), workload="lockref")], ["a", "b"], "lk_mutex",
     "b: workload 'lockref', but a's is 'mutex'"),
    ([doc(plan(1, 1)), doc(plan(1, 1))], ["a", "b"], "nope", "a: --subject 'nope' is not among"),
    ([dict(doc(plan(1, 1)), workload="futex-hash"), doc(plan(1, 1))], ["a", "b"], "lk_mutex",
     "a: workload 'futex-hash' has no judged metrics"),
])
def test_files_that_cannot_be_lined_up_are_refused_with_the_file_named(docs, names, subject, needle):
    with pytest.raises(UsageError) as e:
        across.across_md(docs, names, subject)
    assert needle in str(e.value)


def test_script_on_a_real_record_agrees_with_itself():
    p = subprocess.run([sys.executable, SCRIPT, "--subject", "lk_mutex_v_base", REAL, REAL],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # the same file twice: every judged cell is behind in both or in neither
    row = [ln for ln in p.stdout.splitlines() if ln.startswith("| throughput |")][0]
    every, some, none, unjudged, worse = [int(x) for x in row.strip("|").split("|")[1:]]
    assert some == 0 and every + none + unjudged == 4 and worse >= every


def test_script_bad_input_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{")
    p = subprocess.run([sys.executable, SCRIPT, REAL, str(bad)], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "x.json" in p.stderr
    p = subprocess.run([sys.executable, SCRIPT, "--subject", "nope", REAL, REAL],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "--subject 'nope'" in p.stderr


def test_files_that_ran_their_locks_in_one_order_are_named():
    """A loss that recurs in files run with one shuffle seed may be the order's: such files are
    named together; a file with another seed, an unshuffled one, or one without the record is not."""
    a, b, c, d, e = (doc(plan(True, True)) for _ in range(5))
    for x, order in ((a, {"shuffle": True, "seed": 0}), (b, {"shuffle": True, "seed": 0}),
                     (c, {"shuffle": True, "seed": 9}), (d, {"shuffle": False, "seed": 0})):
        x["order"] = order
    text = "\n".join(across.across_md([a, b, c, d, e], list("abcde"), "lk_mutex"))
    assert "- F1, F2 ran their locks in the same order (shuffled with seed 0): a loss" in text
    assert "F3" not in text.split("ran their locks")[0].splitlines()[-1]
    assert text.count("ran their locks in the same order") == 1
    # two unshuffled files share the one order there is, whatever their seeds
    e["order"] = {"shuffle": False, "seed": 5}
    text = "\n".join(across.across_md([d, e], ["d", "e"], "lk_mutex"))
    assert "- F1, F2 ran their locks in the same order (not shuffled): a loss" in text
    # different seeds: nothing said
    text = "\n".join(across.across_md([a, c], ["a", "c"], "lk_mutex"))
    assert "same order" not in text
