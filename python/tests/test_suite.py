"""`locklab suite`: the experiment list is valid against the real driver, and a quick run writes one
results file per experiment, a summary and the report."""

import json

import pytest

from conftest import real_driver
from locklab import suite

DRIVER = real_driver()
needs_driver = pytest.mark.skipif(DRIVER is None, reason="locklab-bench not built (make build)")


def test_list_names_every_experiment(run_cli):
    rc, out, _ = run_cli("suite", "--list")
    assert rc == 0
    for e in suite.EXPERIMENTS:
        assert e.name in out and f"locklab bench {e.workload} " in out


def test_only_rejects_unknown_experiment(run_cli):
    rc, _, err = run_cli("suite", "--only", "seed004-mutex,nope")
    assert rc == 2
    assert "--only" in err and "nope" in err


@needs_driver
def test_quick_suite_writes_results_summary_and_report(tmp_path, monkeypatch, run_cli):
    monkeypatch.setenv("LOCKLAB_BENCH", DRIVER)
    only = "seed004-mutex,seed002-retry,seed000-hash"
    rc, out, err = run_cli("suite", "--quick", "--no-progress", "--only", only, "--out", tmp_path)
    assert rc == 0, err
    for name in only.split(","):
        doc = json.loads((tmp_path / f"{name}.json").read_text())
        assert doc["schema"] == "locklab-results/1"
        assert doc["experiment"] == name
        assert doc["runs"] and doc["cells"]
        assert doc["command"].startswith("locklab bench ")
    mutex = json.loads((tmp_path / "seed004-mutex.json").read_text())
    # '+mutex' expands to every available mutex-family entry, after the named ones
    assert mutex["locks"][:2] == ["lk_mutex", "glibc_normal"]
    assert mutex["baseline"] == "glibc_normal"
    retry = json.loads((tmp_path / "seed002-retry.json").read_text())
    assert retry["axes"]["retry-limit"] == [1, 100]
    summary = (tmp_path / "summary.md").read_text()
    for name in only.split(","):
        assert f"## {name}" in summary
    # issue 2's targets for lk_mutex, and the seed-002 figures for the retry sweep
    assert "lk_mutex against the foundation issue's targets" in summary
    assert "Uncontended lock+unlock, ns per pair" in summary
    assert "| cas_failures_per_success | fallback_rate |" in summary
    assert (tmp_path / "report" / "index.html").is_file()


@needs_driver
def test_summarize_rebuilds_from_results(tmp_path, monkeypatch, run_cli):
    monkeypatch.setenv("LOCKLAB_BENCH", DRIVER)
    rc, _, err = run_cli("suite", "--quick", "--no-progress", "--only", "seed002-refcount",
                         "--out", tmp_path)
    assert rc == 0, err
    (tmp_path / "summary.md").unlink()
    rc, out, err = run_cli("suite", "--summarize", tmp_path)
    assert rc == 0, err
    text = (tmp_path / "summary.md").read_text()
    assert "## seed002-refcount" in text and "| ns_per_op |" in text
    rc, _, err = run_cli("suite", "--summarize", tmp_path / "nothing-here")
    assert rc == 2 and "--summarize" in err


@needs_driver
def test_every_experiment_plans_against_the_driver(monkeypatch):
    """The full (not quick) experiment definitions pass the same validation as `locklab bench`."""
    from locklab.cli import bench_parser, build_plan
    from locklab.driver import Driver
    monkeypatch.setenv("LOCKLAB_BENCH", DRIVER)
    d = Driver()
    algorithms = d.algorithms()
    for e in suite.EXPERIMENTS:
        wl = d.workload(e.workload)
        locks = suite.resolve_locks(e, wl, algorithms, note=lambda m: None)
        plan = build_plan(wl, algorithms, bench_parser(wl, algorithms).parse_args(
            suite.bench_args(e, locks, quick=False)))
        assert plan.total_runs > 0


@needs_driver
def test_interrupted_suite_resumes(tmp_path, monkeypatch, run_cli):
    """Ctrl-C in the second experiment: the first stays complete, the second is kept as
    interrupted, and `suite --resume` keeps the first, finishes the second, and runs nothing
    twice."""
    from locklab.driver import Driver
    monkeypatch.setenv("LOCKLAB_BENCH", DRIVER)
    real_run = Driver.run
    calls = []

    def run(self, workload, args, env=None):
        calls.append((workload, tuple(args)))
        if stop_at and len(calls) == stop_at:
            raise KeyboardInterrupt
        return real_run(self, workload, args, env)
    monkeypatch.setattr(Driver, "run", run)
    only = "seed002-refcount,seed002-cas-storm"
    stop_at = 6 + 3  # refcount: 3 locks x 2 repeats; then the third cas-storm run
    rc, out, err = run_cli("suite", "--quick", "--no-progress", "--only", only, "--out", tmp_path)
    assert rc == 130
    seed = json.loads((tmp_path / "seed002-refcount.json").read_text())["order"]["seed"]
    assert f"lock-order seed {seed}" in out
    # the command given runs the same experiments with the same lock order
    assert err.strip().endswith(f"continue with: locklab suite --out {tmp_path} --resume "
                                f"--only {only} --seed {seed}")
    assert json.loads((tmp_path / "seed002-refcount.json").read_text())["status"] == "complete"
    cas = json.loads((tmp_path / "seed002-cas-storm.json").read_text())
    assert cas["status"] == "interrupted" and len(cas["runs"]) == 2
    stop_at = None
    calls.clear()
    # resumed without --seed: the interrupted suite's is read back from its files
    rc, out, err = run_cli("suite", "--quick", "--no-progress", "--only", only, "--out", tmp_path,
                           "--resume")
    assert rc == 0, err
    assert "suite: seed002-refcount: kept, complete in" in out
    assert f"lock-order seed {seed}" in out
    cas = json.loads((tmp_path / "seed002-cas-storm.json").read_text())
    assert cas["status"] == "complete" and len(cas["runs"]) == 3 * 2
    assert cas["order"]["seed"] == seed
    assert len(calls) == 3 * 2 - 2 and all(w == "cas-storm" for w, _ in calls)


@needs_driver
def test_each_suite_draws_its_own_lock_order_unless_given_one(tmp_path, monkeypatch, run_cli):
    """Two records of one matrix with one seed run every cell's locks in the same order, so a loss
    that recurs in both may be the order's (what ran before, when in the run): each suite draws its
    own seed, records it, and --seed N gives that order back."""
    monkeypatch.setenv("LOCKLAB_BENCH", DRIVER)
    seeds = []
    for d in ("a", "b"):
        rc, out, err = run_cli("suite", "--quick", "--no-progress", "--only", "seed002-refcount",
                               "--out", tmp_path / d)
        assert rc == 0, err
        doc = json.loads((tmp_path / d / "seed002-refcount.json").read_text())
        assert doc["order"]["shuffle"] is True and f"--seed {doc['order']['seed']}" in doc["command"]
        seeds.append(doc["order"]["seed"])
    assert seeds[0] != seeds[1] and min(seeds) >= 1  # equal 1 time in 2^31
    rc, out, err = run_cli("suite", "--quick", "--no-progress", "--only", "seed002-refcount",
                           "--out", tmp_path / "c", "--seed", "7")
    assert rc == 0, err
    doc = json.loads((tmp_path / "c" / "seed002-refcount.json").read_text())
    assert doc["order"]["seed"] == 7 and "lock-order seed 7" in out
    rc, _, err = run_cli("suite", "--only", "seed002-refcount", "--seed", "-3")
    assert rc == 2 and "--seed: expected an integer in [0, " in err


@needs_driver
def test_quick_issue11_experiments_judge_their_subject(tmp_path, monkeypatch, run_cli):
    monkeypatch.setenv("LOCKLAB_BENCH", DRIVER)
    only = "issue11-batch,issue11-spin"
    rc, _, err = run_cli("suite", "--quick", "--no-progress", "--only", only, "--out", tmp_path)
    assert rc == 0, err
    batch = json.loads((tmp_path / "issue11-batch.json").read_text())
    assert batch["workload"] == "mutex-batch" and batch["subject"] == "lk_mutex"
    assert batch["metric"] == "finish_s" and batch["higher_is_better"] is False
    # every blocking mutex the build has: the named ones, then '+mutex' (peers), never a spinlock
    assert batch["locks"][:5] == ["lk_mutex", "glibc_normal", "glibc_adaptive", "glibc_pi",
                                  "futex3"]
    assert "spin_ttas" not in batch["locks"]
    for r in batch["runs"]:
        assert r["result"]["batch_ok"] is True
    spin = json.loads((tmp_path / "issue11-spin.json").read_text())
    assert spin["subject"] == "spin_ttas" and spin["locks"][0] == "spin_ttas"
    summary = (tmp_path / "summary.md").read_text()
    assert "### Where lk_mutex is neither first nor tied" in summary
    assert "### lk_mutex per cell: time to finish, slowest thread, p99 latency" in summary
    assert "### Where spin_ttas is neither first nor tied" in summary
    assert ("| cell | throughput | p99 latency | p99.9 latency | worst thread's p99 | "
            "Jain fairness |") in summary
    # the real driver reports each thread's p99 for spinlocks too: the column is judged, not "-"
    rows = summary.split("### spin_ttas per cell:")[1].split("\n| threads=")[1:]
    assert rows and all(r.split(" | ")[4] != "-" for r in rows), rows
    # rebuilt from the files alone, the sections come back (the subject is in the results)
    (tmp_path / "summary.md").unlink()
    rc, _, err = run_cli("suite", "--summarize", tmp_path)
    assert rc == 0, err
    assert "### Where spin_ttas is neither first nor tied" in (tmp_path / "summary.md").read_text()
