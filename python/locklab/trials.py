"""Run one command under several locks, R times each, interleaved and shuffled, and compare.

This is the machinery behind `locklab apps` and `locklab advise` (advise.py):

    Command       what to run: argv, stdin, which output to fingerprint, the metric, an optional
                  service (a server started on the lock around the command, which drives it), a
                  timeout, and whether the output must be identical on every lock
    Metric        "wall" (the command's wall time, lower is better), a regular expression on its
                  output (e.g. sysbench's "total time"), or any function of (output, record),
                  which may raise MetricError to fail the run with its reason
    schedule()    repeats are the outer loop and the variants are shuffled within each repeat
                  (seeded), so slow drift of the machine hits every lock alike
    run_trial()   one run: locklab-exec (C) measures wall and CPU time and the exit status; the
                  output is hashed (sha256) and the metric read; a failure keeps stderr's tail;
                  Command.keep_output keeps the output file for the caller to compare
    run_trials()  the schedule, with a progress bar
    analyse()     per variant: the metric's summary (stats.summarize), CPU per run, the comparison
                  with the baseline (ratio of medians with bootstrap CI, Mann-Whitney p, overlap,
                  verdict), failures, and whether every run's output matched the baseline's

A variant is a lock name the shim supports (run under LD_PRELOAD with LOCKLAB_LOCK), or "none"
(no shim at all: the shim's own overhead is glibc vs none). The front end never times anything
itself: wall and CPU time come from locklab-exec, the service's CPU from wait4().
"""

import hashlib
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

from . import shim
from . import stats as st
from .errors import LocklabError, UsageError


@dataclass
class Metric:
    """What a run yields: name, unit, direction, and how to read it."""
    name: str = "wall time"
    unit: str = "s"
    higher_is_better: bool = False
    regex: Optional[str] = None        # first group of the first match in stdout+stderr
    scale: float = 1.0                 # the matched number times this
    func: Optional[Callable] = None    # func(output_text, record) -> float

    def read(self, output, record):
        """The run's value, None when the output does not have it (a regex that matched nothing);
        MetricError when it has something that is not a number."""
        if self.func is not None:
            return self.func(output, record)
        if self.regex is not None:
            m = re.search(self.regex, output, re.MULTILINE)
            if not m:
                return None
            text = m.group(1) if m.re.groups else m.group(0)   # a pattern without a group: all of it
            try:
                return float(text) * self.scale
            except (TypeError, ValueError):
                raise MetricError(f"metric '{self.name}': the regex matched {m.group(0)!r}, and "
                                  f"{text!r} is not a number") from None
        return record["wall_ns"] / 1e9

    def describe(self):
        d = {"name": self.name, "unit": self.unit, "higher_is_better": self.higher_is_better}
        if self.regex:
            d["regex"] = self.regex
        return d


WALL = Metric()


@dataclass
class Service:
    """A server the command talks to; it runs on the variant's lock, the command does not."""
    argv: List[str]
    port: int                          # ready once 127.0.0.1:port accepts a connection
    ready_timeout: float = 20.0


@dataclass
class Command:
    name: str
    argv: List[str]
    cwd: Optional[str] = None
    stdin: Optional[str] = None        # a file
    deterministic: bool = False        # every run's output must be byte-identical
    fingerprint: str = "stdout"        # "stdout", or a path relative to cwd that the run writes
    metric: Metric = field(default_factory=Metric)
    service: Optional[Service] = None
    timeout: float = 600.0
    env: dict = field(default_factory=dict)
    # exit statuses that mean "the program could not set itself up", not "it failed on this lock"
    # (stress-ng's EXIT_NO_RESOURCE, 3): such a run is repeated, up to `retries` times, and counted
    retry_statuses: tuple = ()
    retries: int = 0
    # keep the fingerprinted output of a successful run (moved to <workdir>/<tag>.output, named by
    # the trial's "output_path"; the caller removes it) instead of deleting it: `locklab advise
    # --check-output` shows where a run's output differs from the reference
    keep_output: bool = False


def schedule(variants, repeat, seed=0, shuffle=True):
    """[(repeat, variant)]: repeats outermost, variants shuffled per repeat (seeded)."""
    rng = random.Random(seed)
    out = []
    for r in range(repeat):
        order = list(variants)
        if shuffle:
            rng.shuffle(order)
        out.extend((r, v) for v in order)
    return out


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _tail(path, n=2000):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - n))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _wait_port(port, proc, timeout):
    deadline = time.monotonic() + timeout   # a readiness deadline, not a measurement
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def _stop_service(proc):
    """SIGTERM, then reap with wait4: (exit status, CPU seconds of the service)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    except ChildProcessError:
        return proc.returncode, None
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, ru.ru_utime + ru.ru_stime


def run_trial(cmd, variant, repeat, workdir, exec_path=None, preload=None, stat_dir=None):
    """One run of cmd on variant; returns the trial record (never raises for the program failing)."""
    retried = 0
    while True:
        t = _run_trial_once(cmd, variant, repeat, workdir, exec_path, preload, stat_dir)
        if t.get("ok") or t.get("status") not in cmd.retry_statuses or retried >= cmd.retries:
            if retried:
                t["retried"] = retried
            return t
        retried += 1


def _run_trial_once(cmd, variant, repeat, workdir, exec_path=None, preload=None, stat_dir=None):
    exec_path = exec_path or shim.find_exec()
    tag = f"{cmd.name}.{variant}.{repeat}"
    rec_path = os.path.join(workdir, f"{tag}.record.json")
    out_path = os.path.join(workdir, f"{tag}.stdout")
    err_path = os.path.join(workdir, f"{tag}.stderr")
    stat_file = os.path.join(stat_dir, f"{tag}.stat.json") if stat_dir else None
    lock_env = shim.shim_env(variant, preload, stat_file=stat_file)
    trial = {"variant": variant, "repeat": repeat, "ok": False}
    svc = None
    if cmd.service is not None:
        env_cmd = shim.clean_env()
        with open(os.path.join(workdir, f"{tag}.service.log"), "wb") as log:
            svc = subprocess.Popen(cmd.service.argv, env=lock_env, stdout=log, stderr=subprocess.STDOUT,
                                   cwd=cmd.cwd)
        if not _wait_port(cmd.service.port, svc, cmd.service.ready_timeout):
            code, _ = _stop_service(svc)
            trial.update(status=None, error=f"service {cmd.service.argv[0]} did not start "
                         f"(exit {code}): {_tail(os.path.join(workdir, f'{tag}.service.log'))}")
            return trial
    else:
        env_cmd = lock_env
    env_cmd = {**env_cmd, **cmd.env}
    argv = [exec_path, "--record", rec_path, "--stdout", out_path, "--timeout", repr(float(cmd.timeout))]
    if cmd.stdin:
        argv += ["--stdin", cmd.stdin]
    argv += ["--", *cmd.argv]
    with open(err_path, "wb") as err:
        subprocess.run(argv, env=env_cmd, cwd=cmd.cwd, stderr=err, stdin=subprocess.DEVNULL)
    if svc is not None:
        code, svc_cpu = _stop_service(svc)
        trial["service_cpu_s"] = svc_cpu
        trial["service_status"] = shim.exit_status(code) if code is not None else None
    try:
        with open(rec_path) as f:
            record = json.load(f)
    except (OSError, ValueError):
        trial.update(status=None, error=f"locklab-exec left no record: {_tail(err_path)}")
        return trial
    trial.update(status=record["status"], timed_out=record["timed_out"],
                 wall_s=record["wall_ns"] / 1e9, user_s=record["user_ns"] / 1e9,
                 sys_s=record["sys_ns"] / 1e9)
    trial["cpu_s"] = trial["user_s"] + trial["sys_s"] + (trial.get("service_cpu_s") or 0.0)
    if record["status"] != 0 or record["timed_out"]:
        trial["error"] = ("timed out after %gs" % cmd.timeout if record["timed_out"]
                          else f"exit status {record['status']}")
        trial["stderr_tail"] = _tail(err_path)
        return trial
    fp = out_path if cmd.fingerprint == "stdout" else os.path.join(cmd.cwd or workdir, cmd.fingerprint)
    trial["digest"] = _sha256(fp) if os.path.exists(fp) else None
    try:
        with open(out_path, "rb") as f:
            text = f.read(1 << 20).decode(errors="replace")
    except OSError:
        text = ""
    text += _tail(err_path, 1 << 16)
    try:
        value = cmd.metric.read(text, record)
    except MetricError as e:
        trial["error"] = e.message
        trial["stderr_tail"] = text[-2000:]
        return trial
    if value is None or not math.isfinite(value):
        trial["error"] = f"metric '{cmd.metric.name}' not found in the output"
        trial["stderr_tail"] = text[-2000:]
        return trial
    trial["metric"] = float(value)
    trial["ok"] = True
    if cmd.keep_output and os.path.exists(fp):
        kept = os.path.join(workdir, f"{tag}.output")
        shutil.move(fp, kept)
        trial["output_path"] = kept
    for p in (out_path, err_path, rec_path):
        try:
            os.unlink(p)
        except OSError:
            pass
    if cmd.fingerprint != "stdout" and os.path.exists(fp):
        os.unlink(fp)
    return trial


def run_trials(cmd, variants, repeat, seed=0, progress=None, workdir=None, stat_dir=None, shuffle=True):
    """Every (repeat, variant) of the schedule; progress(trial) is called after each run."""
    exec_path = shim.find_exec()
    preload = shim.find_preload() if any(v != "none" for v in variants) else None
    own = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix="locklab-trials-")
    out = []
    try:
        for r, v in schedule(variants, repeat, seed, shuffle):
            t = run_trial(cmd, v, r, workdir, exec_path, preload, stat_dir)
            out.append(t)
            if progress:
                progress(t)
    finally:
        if own:
            import shutil
            shutil.rmtree(workdir, ignore_errors=True)
    return out


def analyse(trials, variants, baseline, higher_is_better):
    """Summary, comparisons against the baseline, failures and output identity."""
    per = {}
    for v in variants:
        ts = [t for t in trials if t["variant"] == v]
        good = [t for t in ts if t.get("ok")]
        entry = {"runs": len(ts), "failed": len(ts) - len(good),
                 "retried": sum(t.get("retried", 0) for t in ts)}
        if good:
            entry.update(st.summarize([t["metric"] for t in good]))
            entry["cpu_s_median"] = st.summarize([t["cpu_s"] for t in good])["median"]
            entry["wall_s_median"] = st.summarize([t["wall_s"] for t in good])["median"]
        fails = [t for t in ts if not t.get("ok")]
        if fails:
            entry["errors"] = sorted({t.get("error", "failed") for t in fails})
        per[v] = entry
    comps = []
    if baseline in per and "values" in per[baseline]:
        for v in variants:
            if v == baseline or "values" not in per[v]:
                continue
            c = st.compare_samples(per[v]["values"], per[baseline]["values"], higher_is_better)
            comps.append({"variant": v, "baseline": baseline, **c})
    digests = {}
    for t in trials:
        if t.get("ok") and t.get("digest"):
            digests.setdefault(t["digest"], []).append((t["variant"], t["repeat"]))
    ref = None
    for t in trials:
        if t.get("ok") and t.get("digest") and t["variant"] == baseline:
            ref = t["digest"]
            break
    if ref is None and digests:
        ref = next(iter(digests))
    mismatches = [{"variant": v, "repeat": r, "digest": d}
                  for d, runs in digests.items() if d != ref for v, r in runs]
    identity = {"reference": ref, "checked_runs": sum(len(x) for x in digests.values()),
                "identical": not mismatches, "mismatches": mismatches}
    return {"stats": per, "comparisons": comps, "identity": identity}


def check_variants(variants, preload=None, allow_none=True, opt="--lock"):
    """UsageError for a variant the shim does not support (the message names the option `opt`)."""
    for v in variants:
        shim.check_lock(v, preload, allow_none=allow_none, opt=opt)
    return variants


class TrialError(LocklabError):
    """A run failed where the baseline did not (the caller decides whether that stops everything)."""


class MetricError(LocklabError):
    """A run's output has no usable value of the metric (Metric.func raises it to say why): the
    run fails with this message as its error."""


__all__ = ["Metric", "WALL", "Service", "Command", "schedule", "run_trial", "run_trials", "analyse",
           "check_variants", "TrialError", "MetricError", "UsageError"]
