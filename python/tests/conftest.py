"""Shared fixtures: a fake locklab-bench on LOCKLAB_BENCH, a helper that runs the CLI in-process, and
a check that every results file (and partial file) the tests make locklab write satisfies the
published JSON Schema (python/locklab/schema/results.schema.json)."""

import json
import os
import stat
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the package even without `pip install -e`

from locklab import cli, results, runner  # noqa: E402


@pytest.fixture(autouse=True)
def produced_files_match_the_schema(monkeypatch):
    """After each test: every results file locklab wrote validates against the schema, and so does
    every line of every partial file still on disk."""
    written, partials = [], []
    real_dump, real_create = results.dump, runner.PartialFile.create

    def dump(doc, path):
        real_dump(doc, path)
        written.append(str(path))

    def create(self, plan, command):
        real_create(self, plan, command)
        partials.append(self.path)

    monkeypatch.setattr(results, "dump", dump)
    monkeypatch.setattr(runner.PartialFile, "create", create)
    yield
    for path in written:
        if os.path.exists(path):
            results.load(path)  # raises FileError naming the field
    for path in partials:
        if not os.path.exists(path):
            continue
        lines = [ln for ln in Path(path).read_text().splitlines() if ln.strip()]
        for i, ln in enumerate(lines):
            try:
                obj = json.loads(ln)
            except ValueError:
                assert i == len(lines) - 1, f"{path}:{i + 1}: not JSON"
                continue  # the line a killed process was writing
            problem = results.check(obj, "partial_header" if i == 0 else "partial_run")
            assert problem is None, f"{path}:{i + 1}: {problem}"


class FakeBench:
    def __init__(self, path, log):
        self.path = path
        self.log = log

    def calls(self):
        if not self.log.exists():
            return []
        return [json.loads(ln) for ln in self.log.read_text().splitlines()]

    def runs(self):
        """argv of every measurement run (not describe / list)."""
        return [c for c in self.calls() if c and c[0] not in ("describe", "list")]


@pytest.fixture
def fake_bench(tmp_path, monkeypatch):
    exe = tmp_path / "locklab-bench"
    # the script itself with an isolated, site-less interpreter: it starts in a few milliseconds
    exe.write_text(f"#!{sys.executable} -IS\n" + (HERE / "fake_bench.py").read_text())
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "bench.log"
    monkeypatch.setenv("LOCKLAB_BENCH", str(exe))
    monkeypatch.setenv("FAKE_BENCH_LOG", str(log))
    monkeypatch.delenv("FAKE_BENCH_FAIL", raising=False)
    monkeypatch.delenv("FAKE_BENCH_BAD", raising=False)
    monkeypatch.delenv("FAKE_BENCH_ZERO", raising=False)
    monkeypatch.delenv("FAKE_BENCH_STOP", raising=False)
    monkeypatch.delenv("FAKE_BENCH_BUSY", raising=False)
    monkeypatch.delenv("FAKE_BENCH_SLOW", raising=False)
    monkeypatch.delenv("LOCKLAB_BUSY_NS_PER_ITER", raising=False)
    monkeypatch.chdir(tmp_path)
    return FakeBench(exe, log)


@pytest.fixture
def run_cli(capsys):
    """run_cli(*argv) -> (exit status, stdout, stderr), running locklab in this process."""
    def run(*argv):
        rc = cli.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return rc, out, err
    return run


def real_driver():
    """Path of a real locklab-bench, or None (tests that need it skip)."""
    env = os.environ.get("LOCKLAB_BENCH")
    cands = [env] if env else []
    cands.append(str(HERE.parents[1] / "build" / "locklab-bench"))
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None
