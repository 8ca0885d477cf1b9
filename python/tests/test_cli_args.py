"""Bad input is refused before anything runs: one line, exit 2 (fake driver on LOCKLAB_BENCH)."""

import re

import pytest

from locklab import cli


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
    assert rc == 2 and out == ""
    assert one_line(err) == ("locklab: bench: expected a workload name (mutex, wake); its options: "
                             "locklab bench WORKLOAD --help")
    rc, out, err = run_cli("bench", "--threads", "1")
    assert rc == 2 and one_line(err) == "locklab: bench: expected a workload name first, got '--threads'"
    rc, out, err = run_cli("bench", "--help")
    assert rc == 0 and err == "" and "workloads (from locklab-bench describe): mutex, wake" in out


@pytest.mark.parametrize("opt,text", [
    ("--threads", "2,,4"), ("--threads", "2,"), ("--load", ",1"), ("--lock", "lk_mutex,,futex3"),
])
def test_empty_list_items(fake_bench, run_cli, opt, text):
    rc, out, err = run_cli("bench", "mutex", opt, text, "--repeat", "1")
    assert rc == 2
    assert one_line(err) == (f"locklab: {opt}: expected a comma-separated list without empty "
                             f"items, got '{text}'")
    assert fake_bench.runs() == []


def test_schemaless_json(tmp_path, run_cli):
    (tmp_path / "x.json").write_text('{"workload": "mutex", "cells": []}')
    for args in (("show", tmp_path / "x.json"), ("compare", tmp_path / "x.json", tmp_path / "x.json"),
                 ("report", tmp_path / "x.json", "-o", tmp_path / "r")):
        rc, out, err = run_cli(*args)
        assert rc == 2
        assert one_line(err) == (f"locklab: {tmp_path / 'x.json'}: not a locklab results file: no "
                                 "\"schema\" field (expected \"locklab-results/1\")")


def test_report_to_a_device(tmp_path, run_cli):
    from test_report import _write, single_cell_results
    good = _write(tmp_path, "good.json", single_cell_results())
    rc, out, err = run_cli("report", good, "-o", "/dev/full")
    assert rc == 2
    assert one_line(err) == ("locklab: /dev/full: cannot create the output directory: it exists "
                             "and is not a directory")


def test_forwarded_driver_error_is_one_line(fake_bench, run_cli, monkeypatch):
    """The driver's own bad-input message (exit 2) reads like the CLI's: one line, no blank line
    before it, prefixed locklab."""
    monkeypatch.setenv("FAKE_BENCH_FAIL", "2")
    rc, out, err = run_cli("bench", "mutex", "--lock", "futex3", "--repeat", "1", "--out", "f.json")
    assert rc == 2
    assert err == "locklab: fake failure for futex3\n"


def test_version(fake_bench, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"locklab \d+\.\d+\.\d+ \(git ([0-9a-f]{7,}(-dirty)?|unknown)\)", out[0])
    assert out[1] == "locklab-bench 0.0-fake (git fake, Fake)"


def test_version_outside_a_checkout(monkeypatch, tmp_path):
    from locklab import version
    version.git_commit.cache_clear()
    monkeypatch.setattr(version, "SRC", tmp_path / "a" / "b")
    try:
        assert version.git_commit() == "unknown"
        assert version.version_line(None).endswith("locklab-bench: not found (run `make build`)")
    finally:
        version.git_commit.cache_clear()
