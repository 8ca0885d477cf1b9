"""`locklab demo --quick` against the fake driver: locks chosen from the registry, files written."""

from locklab import demo, results


def test_demo_quick(fake_bench, run_cli, tmp_path):
    rc, out, err = run_cli("demo", "--quick", "--no-progress", "--out", "d")
    assert rc == 0, err
    # wanted locks the registry lacks or cannot run are skipped with one line each
    assert "demo: skipping glibc_adaptive: not in this driver's registry" in out
    assert "demo: skipping glibc_pi: PI futexes disabled in this fake" in out
    doc = results.load(tmp_path / "d" / "mutex.json")
    assert doc["locks"] == ["lk_mutex", "glibc_normal", "futex3"]  # --quick keeps three
    assert doc["baseline"] == "glibc_normal"
    assert doc["axes"] == {"threads": [1, 2]}
    assert doc["fixed"]["load"] == 10 and doc["fixed"]["duration"] == 0.02
    assert doc["invoked_as"] == "locklab demo --quick --no-progress --out d"
    # the recorded command is a `locklab bench` line that reproduces the data
    assert doc["command"].startswith("locklab bench mutex --lock lk_mutex,glibc_normal,futex3 "
                                     "--threads 1,2 ")
    assert "--baseline glibc_normal" in doc["command"]
    assert len(doc["runs"]) == 2 * 3 * 2
    summary = (tmp_path / "d" / "summary.md").read_text()
    assert "| threads | load | winner (tied with) |" in summary
    assert summary.count("\n| 1 | 10 |") == 1 and summary.count("\n| 2 | 10 |") == 1
    assert "glibc_normal" in summary  # the best (only) glibc mutex of this fake registry
    assert "skipping glibc_pi" in summary
    try:
        from locklab import report
        has_report = hasattr(report, "write_report")
    except ImportError:
        has_report = False
    if has_report:
        assert "report: " in out and (tmp_path / "d" / "report").is_dir()
    else:
        assert "no HTML report" in out


def test_demo_full_plan_fits_budget(fake_bench):
    """The full demo's plan: seed-004 matrix, baselines, duration from the 3-minute budget."""
    from locklab.driver import Driver
    notes = []
    plan = demo.plan_demo(Driver(), quick=False, note=notes.append)
    assert plan.axes == {"threads": [1, 2, 10, 256], "load": [0, 1, 10, 50, 100]}
    assert plan.locks == ["lk_mutex", "glibc_normal", "futex3", "spin_ttas"]
    assert plan.baseline == "glibc_normal" and plan.repeat >= 4
    per_run = plan.fixed_args["duration"] + plan.fixed_args["warmup"] + demo.OVERHEAD_S
    assert plan.total_runs * per_run <= demo.BUDGET_S * 1.05
    assert len(notes) == 2
    argv = demo.bench_argv(plan, "x.json")
    assert argv[:4] == ["bench", "mutex", "--lock", "lk_mutex,glibc_normal,futex3,spin_ttas"]
