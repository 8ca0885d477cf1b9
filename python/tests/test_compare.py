"""`locklab compare` and the results-file loader on synthetic files with known numbers."""

import csv
import io
import json
import re

import pytest

BASE = [1000000, 1200000, 1400000, 1600000]
CAND = [1700000, 1800000, 1900000, 2000000]


def make_doc(cells, workload="mutex", fixed=None, axes=None, hib=True, metric="ops_per_sec"):
    """A minimal locklab-results/1 document: cells = [(params, {lock: values})]."""
    return {
        "schema": "locklab-results/1", "workload": workload, "command": f"locklab bench {workload}",
        "created": "2026-01-01T00:00:00Z", "machine": {}, "metric": metric,
        "higher_is_better": hib, "baseline": "glibc_normal",
        "locks": sorted({lk for _, s in cells for lk in s}),
        "axes": axes if axes is not None else {}, "fixed": fixed if fixed is not None else
        {"duration": 0.2}, "runs": [],
        "cells": [{"params": p, "stats": {lk: {"values": v} for lk, v in s.items()}}
                  for p, s in cells],
    }


def write(tmp_path, name, doc):
    p = tmp_path / name
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return str(p)


def pair(tmp_path, a_cells, b_cells, **kw):
    return (write(tmp_path, "a.json", make_doc(a_cells, **kw.get("a", {}))),
            write(tmp_path, "b.json", make_doc(b_cells, **kw.get("b", {}))))


def test_changelog_numbers_exact(tmp_path, run_cli):
    a, b = pair(tmp_path, [({"threads": 2}, {"lk_mutex": BASE})],
                [({"threads": 2}, {"lk_mutex": CAND})])
    rc, out, err = run_cli("compare", a, b)
    assert rc == 0, err
    rows = {ln.split()[0]: ln.split()[1:] for ln in out.splitlines()
            if re.match(r"^(average|median|min|max) ", ln)}
    assert rows["average"] == ["1,300,000", "1,850,000", "+42.3", "%"]
    assert rows["median"] == ["1,300,000", "1,850,000", "+42.3", "%"]
    assert rows["min"] == ["1,000,000", "1,700,000", "+70.0", "%"]
    assert rows["max"] == ["1,600,000", "2,000,000", "+25.0", "%"]
    assert ("None of the 4 candidate runs falls inside the baseline's range [1.00 M, 1.60 M]: the "
            "slowest candidate run (1.70 M) is faster than the fastest baseline run.") in out
    assert "ratio of medians 1.423" in out and ": faster" in out
    assert "mutex threads=2 lock=lk_mutex" in out


def test_changelog_overlap_and_slower(tmp_path, run_cli):
    a, b = pair(tmp_path, [({}, {"x": BASE})], [({}, {"x": [1100000, 1300000, 1500000, 1700000]})])
    rc, out, err = run_cli("compare", a, b)
    assert rc == 0
    assert "3 of the 4 candidate runs fall inside the baseline's range [1.00 M, 1.60 M]." in out
    assert ": tied" in out
    a, b = pair(tmp_path, [({}, {"x": CAND})], [({}, {"x": BASE})])
    rc, out, err = run_cli("compare", a, b)
    assert ("None of the 4 candidate runs falls inside the baseline's range [1.70 M, 2.00 M]: the "
            "fastest candidate run (1.60 M) is slower than the slowest baseline run.") in out
    assert ": slower" in out


def test_lower_is_better(tmp_path, run_cli):
    a, b = pair(tmp_path, [({}, {"x": [300, 310, 320, 330]})], [({}, {"x": [100, 110, 120, 130]})],
                a={"hib": False, "metric": "wake_ns"}, b={"hib": False, "metric": "wake_ns"})
    rc, out, err = run_cli("compare", a, b)
    assert rc == 0
    assert "the slowest candidate run (130) is faster than the fastest baseline run" in out
    assert ": faster" in out


def test_cells_matched_by_params_and_lock_filter(tmp_path, run_cli):
    a, b = pair(tmp_path,
                [({"threads": 1}, {"p": BASE, "q": BASE}), ({"threads": 2}, {"p": BASE})],
                [({"threads": 2}, {"p": CAND, "q": CAND})],
                a={"axes": {"threads": [1, 2]}},
                b={"fixed": {"duration": 0.2, "threads": 2}})
    rc, out, err = run_cli("compare", a, b, "--format", "json")
    assert rc == 0, err
    doc = json.loads(out)
    assert [(c["params"], c["lock"]) for c in doc["comparisons"]] == [({"threads": 2}, "p")]
    c = doc["comparisons"][0]
    assert c["delta_pct"]["min"] == pytest.approx(70.0)
    assert c["comparison"]["overlap"] is False
    rc, out, err = run_cli("compare", a, b, "--lock", "q")
    assert rc == 2 and "share no cell with lock 'q'" in err


def test_csv_and_markdown(tmp_path, run_cli):
    a, b = pair(tmp_path, [({"threads": 2}, {"lk": BASE})], [({"threads": 2}, {"lk": CAND})])
    rc, out, err = run_cli("compare", a, b, "--format", "csv")
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["stat"] for r in rows] == ["average", "median", "min", "max"]
    assert rows[2]["baseline"] == "1000000.0" and rows[2]["candidate"] == "1700000.0"
    assert float(rows[2]["delta_pct"]) == pytest.approx(70.0)
    assert rows[0]["verdict"] == "faster" and rows[0]["threads"] == "2"
    rc, out, err = run_cli("compare", a, b, "--format", "markdown")
    assert "| min | 1,000,000 | 1,700,000 | +70.0 % |" in out
    assert "**faster**" in out


def test_refuses_different_workloads_and_fixed_params(tmp_path, run_cli):
    a, b = pair(tmp_path, [({}, {"x": BASE})], [({}, {"x": CAND})], b={"workload": "spinlock"})
    rc, out, err = run_cli("compare", a, b)
    assert rc == 2 and "different experiments" in err and "workload: mutex vs spinlock" in err
    assert out == ""
    a, b = pair(tmp_path, [({}, {"x": BASE})], [({}, {"x": CAND})],
                a={"fixed": {"duration": 0.2, "load": 10}},
                b={"fixed": {"duration": 0.5, "load": 10}})
    rc, out, err = run_cli("compare", a, b)
    assert rc == 2 and "--duration: 0.2 vs 0.5" in err and "load" not in err
    a, b = pair(tmp_path, [({"threads": 1}, {"x": BASE})], [({}, {"x": CAND})],
                a={"axes": {"threads": [1, 2]}}, b={"fixed": {"duration": 0.2, "threads": 8}})
    rc, out, err = run_cli("compare", a, b)
    assert rc == 2 and "--threads: swept [1, 2] vs 8" in err


@pytest.mark.parametrize("content,problem", [
    ("", "empty file"),
    ('{"schema": "locklab-results/1", "workload": "mu', "truncated JSON"),
    ("not json at all", "not JSON"),
    ("[1, 2]", "not a results file: top level is a JSON array, expected an object"),
    ('{"schema": "locklab-results/2"}', "unsupported schema \"locklab-results/2\""),
    ('{"schema": "locklab-run/1"}', "is a single run record, not a results file"),
    ('{"workload": "mutex"}', "not a locklab results file: no \"schema\" field"),
    ('{"schema": "locklab-results/1", "workload": "mutex"}', "\"metric\" is missing"),
    ('{"schema": "locklab-partial/1"}', "the partial file of an unfinished bench"),
])
def test_bad_results_files(tmp_path, run_cli, content, problem):
    good = write(tmp_path, "good.json", make_doc([({}, {"x": BASE})]))
    bad = write(tmp_path, "bad.json", content)
    for args in ((bad, good), (good, bad)):
        rc, out, err = run_cli("compare", *args)
        assert rc == 2
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"locklab: {bad}: ")
        assert problem in lines[0]


def test_truncated_real_document(tmp_path, run_cli):
    text = json.dumps(make_doc([({}, {"x": BASE})]), indent=1)
    bad = write(tmp_path, "cut.json", text[: len(text) // 2])
    rc, out, err = run_cli("compare", bad, bad)
    assert rc == 2 and "truncated JSON" in err


def test_missing_file(tmp_path, run_cli):
    rc, out, err = run_cli("compare", str(tmp_path / "nope.json"), str(tmp_path / "nope.json"))
    assert rc == 2 and err == f"locklab: {tmp_path / 'nope.json'}: no such file\n"


def test_bad_values_in_cells(tmp_path, run_cli):
    d = make_doc([({}, {"x": BASE})])
    d["cells"][0]["stats"]["x"]["values"] = ["fast"]
    bad = write(tmp_path, "v.json", d)
    rc, out, err = run_cli("compare", bad, bad)
    assert rc == 2 and err == (f"locklab: {bad}: malformed results file: at "
                               "cells[0].stats.x.values[0]: expected a number, got the string "
                               "\"fast\"\n")
    d["cells"][0]["stats"]["x"]["values"] = []
    bad = write(tmp_path, "v.json", d)
    rc, out, err = run_cli("compare", bad, bad)
    assert rc == 2 and err.endswith("at cells[0].stats.x.values: expected at least 1 items, got 0\n")


def test_cells_and_locks_in_one_file_only_are_listed(tmp_path, run_cli):
    a, b = pair(tmp_path,
                [({"threads": 1}, {"p": BASE, "q": BASE}), ({"threads": 2}, {"p": BASE}),
                 ({"threads": 4}, {"p": BASE})],
                [({"threads": 2}, {"p": CAND, "r": CAND}), ({"threads": 8}, {"p": CAND})],
                a={"axes": {"threads": [1, 2, 4]}}, b={"axes": {"threads": [2, 8]}})
    rc, out, err = run_cli("compare", a, b)
    assert rc == 0, err
    lines = out.splitlines()
    assert f"only in {a} (not compared): 2 cells (threads=1; threads=4)" in lines
    assert (f"only in {b} (not compared): 1 cell (threads=8); lock r in 1 shared cell "
            "(threads=2)") in lines
    rc, out, err = run_cli("compare", a, b, "--format", "json")
    doc = json.loads(out)
    assert doc["only_in_baseline"]["cells"] == [{"threads": 1}, {"threads": 4}]
    assert doc["only_in_candidate"] == {"cells": [{"threads": 8}], "locks": {"r": ["threads=2"]}}
    rc, out, err = run_cli("compare", a, b, "--format", "csv")
    assert "only in" not in out and f"locklab: only in {a}" in err
