"""scripts/run-cells: the interleaved screening loop of the "tried" records in docs/results. Every
round must run every cell for every lock in turn with the driver's own options, and bad arguments
must be refused with exit 2 and one line naming the argument, before any run."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "run-cells"


def fake_driver(tmp_path):
    """A driver that prints its arguments as one line, as the real one prints one JSON line."""
    drv = tmp_path / "drv"
    drv.write_text('#!/bin/sh\necho "$*"\n')
    drv.chmod(0o755)
    return drv


def run(*args, env=None):
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True, env=env)


def test_interleaves_locks_within_each_cell_and_round(tmp_path):
    drv = fake_driver(tmp_path)
    r = run(2, drv, "2 1 0|8 100 10", "a", "b")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2 * 2 * 2
    order = [(l.split("--lock ")[1].split()[0], l.split("--threads ")[1].split()[0]) for l in lines]
    assert order == [("a", "2"), ("b", "2"), ("a", "8"), ("b", "8")] * 2
    assert "--cs-ns 100 --parallel-ratio 10 --duration 0.3 --warmup 0.05" in lines[2]
    assert lines[0].startswith("mutex ")


def test_dur_sets_the_duration(tmp_path):
    drv = fake_driver(tmp_path)
    r = run(1, drv, "1 1 0", "a", env={"DUR": "0.5", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert "--duration 0.5 " in r.stdout


def test_bad_arguments_are_refused_before_any_run(tmp_path):
    drv = fake_driver(tmp_path)
    cases = [
        ((0, drv, "1 1 0", "a"), "ROUNDS '0'"),
        (("x", drv, "1 1 0", "a"), "ROUNDS 'x'"),
        ((1, tmp_path / "missing", "1 1 0", "a"), "DRIVER"),
        ((1, drv, "1 1", "a"), "cell '1 1'"),
        ((1, drv, "0 1 0", "a"), "cell '0 1 0'"),
        ((1, drv, "1 1 0|2 x 0", "a"), "cell '2 x 0'"),
        ((1, drv, "1 1 0", "a;rm"), "LOCK 'a;rm'"),
        ((1, drv, "1 1 0"), "usage"),
    ]
    for args, word in cases:
        r = run(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert word in r.stderr and len(r.stderr.splitlines()) == 1, (args, r.stderr)
        assert r.stdout == "", args
    r = run(1, drv, "1 1 0", "a", env={"DUR": "soon", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 2 and "DUR 'soon'" in r.stderr


def test_ab_wide_refuses_bad_arguments_before_running(tmp_path):
    """scripts/ab-wide (the whole-matrix A/B): exit 2 and one line on bad input, nothing run."""
    script = ROOT / "scripts" / "ab-wide"
    drv = fake_driver(tmp_path)
    out = tmp_path / "o.json"
    for args, word in [((drv, out, "a"), "usage"),
                       ((tmp_path / "missing", out, "a", "b"), "DRIVER"),
                       ((drv, tmp_path / "no" / "o.json", "a", "b"), "OUT"),
                       ((drv, out, "a", "b c"), "LOCK 'b c'")]:
        r = subprocess.run([str(script), *map(str, args)], capture_output=True, text=True)
        assert r.returncode == 2, (args, r.stderr)
        assert word in r.stderr and len(r.stderr.splitlines()) == 1, (args, r.stderr)
    assert not out.exists()
