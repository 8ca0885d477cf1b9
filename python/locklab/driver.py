"""Finding and talking to the C driver, locklab-bench.

Discovery order (first hit wins):
    1. $LOCKLAB_BENCH (must name an executable file; a wrong path is an error, not a fall-through)
    2. <repo>/build/locklab-bench, where <repo> is the parent of the python/ directory of this package
    3. `locklab-bench` on $PATH

The driver speaks three JSON documents (schemas fixed by lab/lab.h and the lead's format notes):
    describe        {"schema": "locklab-describe/1", "workloads": [...]}
    list --json     {"schema": "locklab-list/1", "algorithms": [...]}
    WORKLOAD --p v  one line: {"schema": "locklab-run/1", "workload": ..., "params": ..., "result": ...}

Everything the CLI knows about workloads, parameters and algorithms comes from here.
"""

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

from .errors import DriverError, UsageError

SCHEMA_DESCRIBE = "locklab-describe/1"
SCHEMA_LIST = "locklab-list/1"
SCHEMA_RUN = "locklab-run/1"

REPO = Path(__file__).resolve().parents[2]


def find_built(name, env_var):
    """Path of the project's executable `name`: $env_var if set (it must be executable), else
    build/NAME, else NAME on $PATH; UsageError (exit 2) saying how to build it."""
    env = os.environ.get(env_var)
    if env:
        if Path(env).is_file() and os.access(env, os.X_OK):
            return env
        raise UsageError(f"{env_var}={env}: not an executable file (run `make build`, or unset {env_var})")
    p = REPO / "build" / name
    if p.is_file() and os.access(p, os.X_OK):
        return str(p)
    w = shutil.which(name)
    if w:
        return w
    raise UsageError(f"cannot find {name} (looked at ${env_var}, {p}, $PATH): run `make build` first")


def find_driver():
    """Path of the locklab-bench executable, or UsageError (exit 2) saying how to build it."""
    return find_built("locklab-bench", "LOCKLAB_BENCH")


class Param:
    """One described workload parameter (see struct lab_param in lab/lab.h)."""

    def __init__(self, d):
        self.name = d["name"]
        self.type = d.get("type", "str")
        self.default = d.get("default")
        self.min = d.get("min")
        self.max = d.get("max")
        ch = d.get("choices")
        self.choices = [c for c in ch.split(",") if c] if isinstance(ch, str) else (ch or None)
        self.help = d.get("help") or ""
        self.axis = bool(d.get("axis"))

    @property
    def required(self):
        return self.default is None


class Workload:
    """One described workload: name, primary metric, its direction and typed parameters."""

    def __init__(self, d):
        self.name = d["name"]
        self.help = d.get("help") or ""
        self.metric = d["metric"]
        self.higher_is_better = bool(d.get("higher_is_better", True))
        self.params = [Param(p) for p in d.get("params", [])]

    def param(self, name):
        for p in self.params:
            if p.name == name:
                return p
        return None

    @property
    def lock_param(self):
        """The dimension the CLI compares: the param named "lock" (alg, or str with choices)."""
        return self.param("lock")


class Driver:
    """A handle on one locklab-bench binary; describe/list are asked once and cached."""

    def __init__(self, path=None):
        self.path = path or find_driver()
        self._describe = None
        self._list = None

    def _json(self, args, schema):
        res = self._exec(args)
        try:
            doc = json.loads(res.stdout)
        except ValueError as e:
            raise DriverError(f"{self.path} {' '.join(args)}: output is not JSON ({e})",
                              status=1, stderr=res.stderr)
        if not isinstance(doc, dict) or doc.get("schema") != schema:
            got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
            raise DriverError(f"{self.path} {' '.join(args)}: expected schema {schema}, got {got!r}")
        return doc

    def _exec(self, args, env=None):
        try:
            res = subprocess.run([self.path, *args], capture_output=True, text=True,
                                 env={**os.environ, **env} if env else None)
        except OSError as e:
            raise DriverError(f"cannot run {self.path}: {e.strerror}")
        if res.returncode in (130, -signal.SIGINT):
            # Ctrl-C reached the driver (a terminal signals the whole process group): an
            # interruption, not a failed run, even when our own SIGINT has not been handled yet
            raise KeyboardInterrupt
        if res.returncode != 0:
            raise DriverError(f"{self.path} {' '.join(args)} failed with exit status {res.returncode}",
                              status=res.returncode, stderr=res.stderr)
        return res

    def describe(self):
        if self._describe is None:
            self._describe = self._json(["describe"], SCHEMA_DESCRIBE)
        return self._describe

    def workloads(self):
        return [Workload(w) for w in self.describe().get("workloads", [])]

    def workload(self, name):
        """The described workload `name`, or UsageError listing the known ones."""
        wls = self.workloads()
        for w in wls:
            if w.name == name:
                return w
        known = ", ".join(w.name for w in wls) or "none"
        raise UsageError(f"unknown workload '{name}' (the driver knows: {known})")

    def algorithms(self):
        if self._list is None:
            self._list = self._json(["list", "--json"], SCHEMA_LIST)
        return self._list.get("algorithms", [])

    def list_doc(self):
        self.algorithms()
        return self._list

    def run(self, workload, args, env=None):
        """One driver process: `locklab-bench WORKLOAD --name value ...`; returns the run record.
        env: variables added to this process's environment for the driver (e.g. the shared
        busy-loop calibration, runner.execute())."""
        argv = [workload]
        for k, v in args:
            argv += [f"--{k}", str(v)]
        res = self._exec(argv, env)
        lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
        if len(lines) != 1:
            raise DriverError(f"{self.path} {' '.join(argv)}: expected one line of JSON, "
                              f"got {len(lines)} lines", stderr=res.stderr)
        try:
            rec = json.loads(lines[0])
        except ValueError as e:
            raise DriverError(f"{self.path} {' '.join(argv)}: run record is not JSON ({e})",
                              stderr=res.stderr)
        if not isinstance(rec, dict) or rec.get("schema") != SCHEMA_RUN:
            raise DriverError(f"{self.path} {' '.join(argv)}: expected schema {SCHEMA_RUN}")
        if not isinstance(rec.get("result"), dict):
            raise DriverError(f"{self.path} {' '.join(argv)}: run record has no result object")
        return rec
