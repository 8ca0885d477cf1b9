"""Bad input is refused before anything runs: one line, exit 2 (fake driver on LOCKLAB_BENCH)."""

import pytest


def one_line(err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("args,msg", [
    (["--threads", "0"], "locklab: --threads: expected an integer in [1, 4096], got '0'"),
    (["--threads", "1,-2"], "locklab: --threads: expected an integer in [1, 4096], got '-2'"),
    (["--load", "-1"], "locklab: --load: expected an integer in [0, 1000000], got '-1'"),
    (["--duration", "-0.5"], "locklab: --duration: expected a number in [0.01, 3600], got '-0.5'"),
    (["--lock", "nosuch"], "locklab: --lock: expected one of the mutex/spinlock algorithms "
                           "(lk_mutex, glibc_normal, futex3, glibc_pi, spin_ttas), got 'nosuch'"),
    (["--locks", "lk_mutex,glibc_pi"],
     "locklab: --lock: 'glibc_pi' is not available in this build: PI futexes disabled in this fake"),
    (["--repeat", "0"], "locklab: --repeat: expected an integer in [1, 100000], got '0'"),
    (["--repeat", "x"], "locklab: --repeat: expected an integer in [1, 100000], got 'x'"),
    (["--duration", "0.1,0.2"],
     "locklab: --duration: expected one value (not a sweepable parameter), got '0.1,0.2'"),
    (["--lock", "lk_mutex,futex3", "--baseline", "glibc_normal"],
     "locklab: --baseline: expected one of the benched locks (lk_mutex, futex3), got 'glibc_normal'"),
    (["--param-seed", "101"], "locklab: --param-seed: expected an integer in [0, 100], got '101'"),
    (["--bogus", "1"], "locklab: unrecognized arguments: --bogus 1"),
])
def test_bench_bad_input(fake_bench, run_cli, args, msg):
    rc, out, err = run_cli("bench", "mutex", *args)
    assert rc == 2
    assert one_line(err) == msg
    assert fake_bench.runs() == []  # refused before any run


def test_unknown_workload(fake_bench, run_cli):
    rc, out, err = run_cli("bench", "nosuch", "--threads", "1")
    assert rc == 2
    assert one_line(err) == "locklab: unknown workload 'nosuch' (the driver knows: mutex, wake)"


def test_required_lock_without_default(fake_bench, run_cli):
    rc, out, err = run_cli("bench", "wake")
    assert rc == 2
    assert one_line(err) == "locklab: --lock: required (this workload has no default lock)"


def test_missing_driver(tmp_path, monkeypatch, run_cli):
    monkeypatch.setenv("LOCKLAB_BENCH", str(tmp_path / "nope"))
    rc, out, err = run_cli("list")
    assert rc == 2
    line = one_line(err)
    assert line.startswith("locklab: LOCKLAB_BENCH=") and "make build" in line


def test_unknown_command(run_cli):
    rc, out, err = run_cli("frobnicate")
    assert rc == 2 and one_line(err).startswith("locklab: ")


def test_compare_bad_format(run_cli, tmp_path):
    rc, out, err = run_cli("compare", "a.json", "b.json", "--format", "xml")
    assert rc == 2 and "invalid choice: 'xml'" in one_line(err)


def test_bench_help_lists_described_options(fake_bench, run_cli):
    with pytest.raises(SystemExit) as e:
        run_cli("bench", "mutex", "--help")
    assert e.value.code == 0


def test_bench_help_text(fake_bench, capsys):
    from locklab import cli
    with pytest.raises(SystemExit):
        cli.main(["bench", "mutex", "--help"])
    out = capsys.readouterr().out
    for opt in ("--lock", "--threads", "--load", "--duration", "--param-seed", "--repeat",
                "--no-shuffle"):
        assert opt in out
    assert "spin_ttas" in out and "glibc_pi" not in out  # only available locks offered


def test_list(fake_bench, run_cli):
    rc, out, err = run_cli("list")
    assert rc == 0
    assert "lk_mutex" in out and "PI futexes disabled in this fake" in out
    rc, out, err = run_cli("list", "--json")
    import json
    assert rc == 0 and json.loads(out)["schema"] == "locklab-list/1"


def test_report_without_support(run_cli, tmp_path):
    try:
        from locklab import report  # noqa: F401
        has = hasattr(report, "run") and hasattr(report, "add_arguments")
    except ImportError:
        has = False
    if has:
        pytest.skip("report.py is installed; its own tests cover `locklab report`")
    rc, out, err = run_cli("report", "x.json", "-o", str(tmp_path / "r"))
    assert rc == 2 and one_line(err).startswith("locklab: report support not installed")


def test_no_driver_anywhere(tmp_path, monkeypatch, run_cli):
    from locklab import driver
    monkeypatch.delenv("LOCKLAB_BENCH", raising=False)
    monkeypatch.setattr(driver, "REPO", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    rc, out, err = run_cli("describe")
    assert rc == 2
    line = one_line(err)
    assert line.startswith("locklab: cannot find locklab-bench") and "run `make build`" in line


def test_driver_found_in_repo_build(tmp_path, monkeypatch, fake_bench):
    from locklab import driver
    (tmp_path / "build").mkdir()
    exe = tmp_path / "build" / "locklab-bench"
    exe.write_bytes(fake_bench.path.read_bytes())
    exe.chmod(0o755)
    monkeypatch.delenv("LOCKLAB_BENCH", raising=False)
    monkeypatch.setattr(driver, "REPO", tmp_path)
    assert driver.find_driver() == str(exe)


def test_bench_without_workload(fake_bench, run_cli):
    rc, out, err = run_cli("bench")
    assert rc == 2 and "workloads (from locklab-bench describe): mutex, wake" in out
    rc, out, err = run_cli("bench", "--threads", "1")
    assert rc == 2 and one_line(err) == "locklab: bench: expected a workload name first, got '--threads'"
