"""`locklab demo` against the fake driver: the plan (cells, locks, budget), the files, the headline."""

import copy

import pytest

from locklab import demo, results


def test_demo_quick(fake_bench, run_cli, tmp_path):
    rc, out, err = run_cli("demo", "--quick", "--no-progress", "--out", "d")
    assert rc == 0, err
    # wanted locks the registry lacks or cannot run are skipped with one line each
    assert "demo: skipping glibc_adaptive: not in this driver's registry" in out
    doc = results.load(tmp_path / "d" / "mutex.json")
    assert doc["locks"] == ["lk_mutex", "glibc_normal", "futex3"]  # --quick keeps three
    assert doc["baseline"] == "glibc_normal"
    assert doc["axes"] == {"threads": [2, 10]}
    assert doc["fixed"]["load"] == 1 and doc["fixed"]["duration"] == 0.02
    assert doc["invoked_as"] == "locklab demo --quick --no-progress --out d"
    # the recorded command is a `locklab bench` line that reproduces the data
    assert doc["command"].startswith("locklab bench mutex --lock lk_mutex,glibc_normal,futex3 "
                                     "--threads 2,10 ")
    assert "--baseline glibc_normal" in doc["command"]
    assert len(doc["runs"]) == 2 * 3 * 2
    # two runs per lock are too few for a verdict: every per-cell claim says so
    claims = doc["headline"]["claims"]
    assert claims and all(": no verdict (" in c["text"] for c in claims)
    assert all("2 runs per lock are too few" in c["text"] for c in claims
               if "uncontended" not in c["text"])
    summary = (tmp_path / "d" / "summary.md").read_text()
    assert "| cell | winner (tied with) | lk_mutex ops_per_sec | vs glibc_normal | vs futex3 |" \
        in summary
    assert summary.count("\n| 2 threads, load 1 |") == 1
    assert "skipping glibc_adaptive" in summary
    assert (tmp_path / "d" / "report" / "index.html").is_file()
    # the terminal ends with the headline: its title, one line per claim, and when the machine
    # was busy, a sentence saying so
    tail = out[out.rindex("Headline: lk_mutex vs the default"):]
    want = [doc["headline"]["title"]] + [c["text"] for c in claims]
    if doc["headline"].get("busy_note"):
        want.append(doc["headline"]["busy_note"])
    assert " ".join(tail.split()) == " ".join(" ".join(want).split())
    # one claim per line (wrapped at spaces, continuation lines indented)
    for c in claims:
        assert f"\n  {c['text'][:40]}" in tail


def _doc(fake_values, busy=()):
    """A results document for the headline: cells threads 10 and 256, three locks, 5 runs each;
    fake_values(lock, threads) -> ops/s; runs of the locks in `busy` were measured while busy."""
    runs, cells = [], []
    from locklab import stats as st
    for t in (10, 256):
        stats = {}
        for lock in ("lk_mutex", "glibc_normal", "futex3"):
            vals = [fake_values(lock, t) * (1 + k / 100) for k in range(5)]
            stats[lock] = st.summarize(vals)
            for k, v in enumerate(vals):
                runs.append({"schema": "locklab-run/1", "workload": "mutex", "lock": lock,
                             "params": {"lock": lock, "threads": t, "load": 1, "duration": 0.5},
                             "repeat": k,
                             "host": {"busy": lock in busy},
                             "result": {"ops_per_sec": v, "elapsed_s": 0.5, "total_ops": int(v),
                                        "cpu_ns_per_op": 1e9 / v,
                                        "uncontended_pair_ns": 12.0 if lock == "lk_mutex" else 15.0}})
        w, tied = st.winner(stats)
        cells.append({"params": {"threads": t}, "stats": stats, "comparisons": [], "winner": w,
                      "winner_tied_with": tied})
    return {"schema": "locklab-results/1", "workload": "mutex", "metric": "ops_per_sec",
            "higher_is_better": True, "baseline": "glibc_normal",
            "locks": ["lk_mutex", "glibc_normal", "futex3"], "axes": {"threads": [10, 256]},
            "fixed": {"load": 1, "duration": 0.5}, "runs": runs, "cells": cells,
            "command": "locklab bench mutex", "machine": {}}


def test_headline_claims():
    doc = _doc(lambda lock, t: {"lk_mutex": 3e6, "glibc_normal": 1e6, "futex3": 2.9e6}[lock])
    h = demo.headline(doc)
    texts = [c["text"] for c in h["claims"]]
    assert texts[0].startswith("10 threads, load 1: lk_mutex 3.00x [")
    assert texts[0].endswith("glibc_normal, no overlap: faster")
    # the strongest other lock is futex3, within 4 %: the ranges overlap, a tie
    assert texts[1].startswith("10 threads, load 1: lk_mutex 1.03x [")
    assert texts[1].endswith("futex3 (best of the others), ranges overlap: tied")
    # CPU per op at the most threads, lower is better, and the uncontended pair (all runs)
    assert any(t.startswith("256 threads, load 1, CPU per op: lk_mutex uses 0.33x [") and
               t.endswith("glibc_normal, no overlap: less CPU") for t in texts)
    assert texts[-1].startswith("uncontended lock+unlock (12.0 vs 15.0 ns, every run): lk_mutex "
                                "takes 0.80x")
    assert "busy_note" not in h
    assert results.check(dict(doc, headline=h)) is None


def test_headline_withholds_verdicts_on_a_busy_machine():
    doc = _doc(lambda lock, t: {"lk_mutex": 3e6, "glibc_normal": 1e6, "futex3": 1.1e6}[lock],
               busy=("glibc_normal",))
    h = demo.headline(doc)
    base = [c for c in h["claims"] if " glibc_normal, " in c["text"]]
    assert base and all(c["verdict"] == "busy" and c["busy"] for c in base)
    assert all(c["text"].endswith("no overlap: no verdict (machine busy during 5 of 10 runs)")
               for c in base if "CPU" not in c["text"] and "uncontended" not in c["text"])
    assert h["busy_note"].startswith("The machine was busy during 10 of 30 runs")
    # the claims against futex3 rest on quiet runs only: they keep their verdict
    assert any(c["verdict"] == "faster" for c in h["claims"] if "futex3" in c["text"])


def test_demo_full_plan_fits_budget(fake_bench):
    """The full demo: threads {2, 10, 256} x load {1, 100}, the locks that matter, five repeats,
    the window sized so the whole demo fits the three-minute budget."""
    from locklab.driver import Driver
    notes = []
    plan = demo.plan_demo(Driver(), quick=False, note=notes.append)
    assert plan.axes == {"threads": [2, 10, 256], "load": [1, 100]}
    # the fake registry has no glibc_adaptive nor rust_parking_lot: skipped with a note each
    assert plan.locks == ["lk_mutex", "glibc_normal", "futex3", "spin_ttas"]
    assert notes == ["demo: skipping glibc_adaptive: not in this driver's registry",
                     "demo: skipping rust_parking_lot: not in this driver's registry"]
    assert plan.baseline == "glibc_normal" and plan.repeat == 5
    per_run = plan.fixed_args["duration"] + plan.fixed_args["warmup"] + demo.OVERHEAD_S
    assert plan.total_runs * per_run + demo.REPORT_S <= demo.BUDGET_S * 1.02
    assert plan.fixed_args["duration"] >= 0.5  # long enough for the ranges to separate
    argv = demo.bench_argv(plan, "x.json")
    assert argv[:4] == ["bench", "mutex", "--lock", "lk_mutex,glibc_normal,futex3,spin_ttas"]
    # with every lock available (6 of them) the window still fits the budget
    assert demo.duration_for(6 * 6 * 5) >= 0.5
    assert 6 * 6 * 5 * (demo.duration_for(180) + demo.WARMUP_S + demo.OVERHEAD_S) + \
        demo.REPORT_S <= demo.BUDGET_S * 1.02


def test_demo_resume_needs_out(fake_bench, run_cli):
    rc, out, err = run_cli("demo", "--quick", "--resume")
    assert rc == 2 and err == ("locklab: --resume: needs --out DIR, the directory of the "
                               "interrupted demo\n")


def test_demo_interrupted_and_resumed(fake_bench, run_cli, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_BENCH_STOP", "4")
    rc, out, err = run_cli("demo", "--quick", "--no-progress", "--out", "d")
    assert rc == 130
    assert err.rstrip().endswith("continue with: locklab demo --out d --resume")
    assert results.load(tmp_path / "d" / "mutex.json")["status"] == "interrupted"
    monkeypatch.delenv("FAKE_BENCH_STOP")
    rc, out, err = run_cli("demo", "--quick", "--no-progress", "--out", "d", "--resume")
    assert rc == 0, err
    doc = results.load(tmp_path / "d" / "mutex.json")
    assert doc["status"] == "complete" and len(doc["runs"]) == 12


@pytest.mark.parametrize("field,value,problem", [
    ("headline", {"title": "x"}, "\"headline.claims\" is missing"),
])
def test_headline_schema(field, value, problem):
    doc = copy.deepcopy(_doc(lambda lock, t: 1e6))
    doc[field] = value
    assert problem in results.check(doc)
