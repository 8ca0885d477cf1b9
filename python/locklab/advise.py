"""`locklab advise -- CMD`: which lock should this program use, on this machine, with the evidence.

    locklab advise [--locks A,B] [--repeat R] [--metric time|regex:PATTERN|cmd:COMMAND]
                   [--higher-is-better | --lower-is-better] [--budget MINUTES] [--timeout SECONDS]
                   [--check-output [FILE]] [--force] [--seed N] [--top N] [--out DIR]
                   [--no-progress] (-- CMD ARGS... | --app NAME [--quick])

How it decides (docs/advise.md says the same for users):

 1. The profile run: CMD once on glibc (glibc's own mutex, through the shim) with the lock profile
    (LOCKLAB_STAT, docs/shim.md). The mutexes' total wait, summed over threads and processes, against
    the run's wall time says whether locks can matter: under WAIT_SHARE (1 %) they do not - advise
    says so, names the hottest mutex anyway, and stops (exit 0) unless --force. This run also checks
    that the metric can be read (a regex that matches nothing is bad input), gives the reference
    output for --check-output, and the duration the plan is made from.
 2. The plan: R runs per candidate lock (default: every lock the shim supports; glibc always). With
    --repeat, R; otherwise as many as the budget affords after the two profile runs, at most
    MAX_AUTO_REPEAT. Fewer than MIN_REPEAT that fit is an error saying what budget it would need.
 3. The runs: trials.schedule (repeats outermost, the locks shuffled within each repeat, seeded), one
    trials.run_trial each: locklab-exec measures wall and CPU time (user+sys) and the exit status;
    this module times nothing. Each run is checked as it finishes: one that fails (exit status,
    signal, no metric where glibc's had one, output different from glibc's under --check-output)
    stops the advice (exit 1) naming the lock, the status and the end of stderr - never a silent
    skip. One that exceeds its timeout (TIMEOUT_FACTOR x the profile run, at least MIN_TIMEOUT_S,
    or --timeout) takes its lock out of the remaining repeats: "timed out", ranked last, said on
    stderr, in the table and in the JSON.
 4. The statistics (trials.analyse, stats.py): per lock the median with its bootstrap 95% CI and the
    CPU per run; against glibc the ratio of medians with its bootstrap CI, Mann-Whitney p, whether
    the [min, max] ranges overlap, and the verdict (faster or slower only when they do not overlap
    and p < 0.05). The ranking is by the ratio, as "times better than glibc" (glibc's median over
    the lock's for a lower-is-better metric such as wall time).
 5. The recommendation, one sentence: "use L: 1.31x [1.22, 1.40] faster than glibc, distributions
    do not overlap" for the best lock judged faster (others faster and statistically tied with it
    named; a CPU cost of CPU_NOTE_RATIO x glibc's or more said), else "no lock is better than glibc
    here (all tied)" or with the counts ("2 tied, 3 slower, 1 timed out").
 6. A second profile run on the best-ranked lock, so that the top contended locks are shown for it
    and for glibc.

Files in --out DIR: advise.json (schema locklab-advise/1, schema/advise.schema.json, validated on
read by load() and `locklab report`), profile-LOCK.json per profile run (locklab-lockstat-run/1,
docs/shim.md), and on an output mismatch output-glibc (the first run) and output-LOCK-rK (repeat K).

Exit status: 0 advice given (a lock, glibc, or "locks do not matter"); 1 stopped (a run failed or
its output differed); 2 bad input (also a metric the glibc run does not have, a budget too small);
127/126 the command does not exist / cannot be executed; 130 Ctrl-C (what was measured is written).
"""

import argparse
import dataclasses
import datetime as _dt
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from . import results as results_mod
from . import shim
from . import stats as st
from . import trials
from .errors import FileError, LocklabError, UsageError
from .runner import command_line, parse_positive_int, split_list

SCHEMA = "locklab-advise/1"
SCHEMA_FILE = Path(__file__).resolve().parent / "schema" / "advise.schema.json"
BASELINE = "glibc"
WAIT_SHARE = 0.01          # total mutex wait under 1 % of the run time: locks do not matter
DEFAULT_BUDGET_MIN = 10.0
MAX_BUDGET_MIN = 7 * 24 * 60.0
MIN_REPEAT = 3             # the least the issue allows; 4 per side is the least for p < 0.05
MAX_AUTO_REPEAT = 10       # what the budget plans at most without --repeat
MAX_REPEAT = 1000
TIMEOUT_FACTOR = 10        # a run may take this many times the profile run ...
MIN_TIMEOUT_S = 10.0       # ... and at least this long
DEFAULT_TOP = 5
CPU_NOTE_RATIO = 1.5       # the recommendation mentions a CPU cost this many times glibc's
TAIL_LINES = 8             # lines of output shown with an error


class Stopped(LocklabError):
    """A run failed, timed out on glibc, or its output differed: the advice stops (exit 1). The
    message is one line, then the end of the run's output, indented."""

    status = 1


# ------------------------------------------------------------------------------------------------
# arguments

DESCRIPTION = (
    "Runs CMD once on glibc's mutex with the lock profile: when its mutexes wait less than 1 % of "
    "its run time, locks do not matter for it, and advise says so (naming the hottest lock) and "
    "stops unless --force. Otherwise it runs CMD on every candidate lock, repeated, interleaved and "
    "shuffled within the budget, and ranks the locks against glibc: median, the ratio's 95% "
    "bootstrap CI, Mann-Whitney p, whether the ranges overlap, CPU per run; then one sentence of "
    "advice and the top contended locks of glibc and of the best-ranked lock. A run that fails, or "
    "whose output differs from glibc's under --check-output, stops the advice and names the lock.")
EPILOG = (
    "Writes DIR/advise.json (schema locklab-advise/1) and DIR/profile-LOCK.json; `locklab report "
    "DIR/advise.json` draws it. Exit status: 0 advice given (a lock, glibc, or locks do not "
    "matter); 1 stopped (a run failed or its output differed); 2 bad input (also a metric the glibc "
    "run does not have, a budget too small); 127 or 126 when CMD does not exist or cannot be "
    "executed; 130 interrupted. docs/advise.md explains how it decides.")


def add_arguments(p):
    p.description = DESCRIPTION
    p.epilog = EPILOG
    p.add_argument("--locks", metavar="A,B",
                   help="candidate shim locks (default: every lock the shim supports, see `locklab "
                   "list`); glibc, the baseline, is always one")
    p.add_argument("--repeat", metavar="R",
                   help=f"runs per lock, at least {MIN_REPEAT} (default: as many as --budget affords, "
                   f"at most {MAX_AUTO_REPEAT}; 4 or more are needed for a verdict other than tied)")
    p.add_argument("--metric", metavar="time|regex:PATTERN|cmd:COMMAND",
                   help="what a run yields: `time`, its wall time (default, lower is better); "
                   "`regex:PATTERN`, the number PATTERN's first group (or whole match) finds in its "
                   "output; `cmd:COMMAND`, the last number a shell command prints when given the run's "
                   "output on stdin, run after each repeat")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--higher-is-better", dest="direction", action="store_const", const="higher",
                   help="a larger value of the metric is better (required with regex: and cmd:)")
    g.add_argument("--lower-is-better", dest="direction", action="store_const", const="lower",
                   help="a smaller value of the metric is better (required with regex: and cmd:)")
    p.add_argument("--budget", metavar="MINUTES",
                   help=f"time for the whole advice (default {DEFAULT_BUDGET_MIN:g}): the repeats are "
                   "planned from the profile run's duration, and a budget too small for "
                   f"{MIN_REPEAT} repeats of every lock is an error saying what it would need")
    p.add_argument("--timeout", metavar="SECONDS",
                   help=f"seconds one run may take (default {TIMEOUT_FACTOR}x the profile run, at least "
                   f"{MIN_TIMEOUT_S:g}; the profile run itself: the budget); a lock whose run times out "
                   "is left out of the remaining repeats and ranked last")
    p.add_argument("--check-output", nargs="?", const="-", metavar="FILE",
                   help="every run's stdout (or FILE, which the program writes afresh in each run; "
                   "relative to the current directory) must be byte-identical to the glibc run's; "
                   "a difference stops the advice and names the lock")
    p.add_argument("--force", action="store_true",
                   help="measure every lock even when the profile says locks do not matter")
    p.add_argument("--seed", default="0", metavar="N", help="seed of the lock-order shuffle (default 0)")
    p.add_argument("--top", default=str(DEFAULT_TOP), metavar="N",
                   help=f"rows of the profile tables (default {DEFAULT_TOP})")
    p.add_argument("--out", metavar="DIR",
                   help="where advise.json and the profiles go (default results/advise-<time>)")
    p.add_argument("--app", metavar="NAME",
                   help="advise on one of `locklab apps`'s programs instead of -- CMD: its command, "
                   "metric, server and output check (`locklab apps --list`)")
    p.add_argument("--quick", action="store_true", help="with --app: the app's small --quick input")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                   help="the program and its arguments, after --")


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _last_lines(text, n=TAIL_LINES):
    lines = [ln.rstrip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-n:]


def _cmd_metric(command):
    """Metric.func for cmd:COMMAND: `sh -c COMMAND` with the run's output (stdout, then the end of
    stderr) on its stdin, not on the lock (no LD_PRELOAD); its last number is the value."""
    def read(output, record):
        try:
            res = subprocess.run(["/bin/sh", "-c", command], input=output.encode(errors="replace"),
                                 capture_output=True, env=shim.clean_env(), timeout=600)
        except subprocess.TimeoutExpired:
            raise trials.MetricError(f"--metric cmd:{command}: did not finish in 600 s") from None
        if res.returncode != 0:
            why = "; ".join(_last_lines(res.stderr.decode(errors="replace"), 2)) or "no message"
            raise trials.MetricError(f"--metric cmd:{command}: exit status "
                                     f"{shim.exit_status(res.returncode)} ({why})")
        nums = _NUMBER.findall(res.stdout.decode(errors="replace"))
        if not nums:
            got = res.stdout.decode(errors="replace").strip()[:80]
            raise trials.MetricError(f"--metric cmd:{command}: printed no number (got {got!r})")
        return float(nums[-1])
    return read


def parse_metric(text, direction):
    """(trials.Metric, description for the JSON) from --metric and the direction flags."""
    if text is None or text == "time":
        if direction == "higher":
            raise UsageError("--higher-is-better: the metric 'time' (the program's wall time) is "
                             "better lower")
        return trials.Metric(name="wall time", unit="s", higher_is_better=False), {"kind": "time"}
    kind, sep, arg = text.partition(":")
    if kind not in ("regex", "cmd") or not sep:
        raise UsageError(f"--metric: expected time, regex:PATTERN or cmd:COMMAND, got '{text}'")
    if not arg.strip():
        what = "a pattern" if kind == "regex" else "a command"
        raise UsageError(f"--metric: expected {what} after '{kind}:', got '{text}'")
    if direction is None:
        raise UsageError(f"--metric {kind}:...: say which way is better: add --higher-is-better or "
                         "--lower-is-better")
    hib = direction == "higher"
    if kind == "regex":
        try:
            re.compile(arg, re.MULTILINE)
        except re.error as e:
            raise UsageError(f"--metric: regex:{arg}: not a regular expression ({e})") from None
        return (trials.Metric(name=f"regex:{arg}", unit="", higher_is_better=hib, regex=arg),
                {"kind": "regex", "regex": arg})
    return (trials.Metric(name=f"cmd:{arg}", unit="", higher_is_better=hib, func=_cmd_metric(arg)),
            {"kind": "cmd", "command": arg})


def _number(text, opt, lo, hi, what):
    try:
        x = float(text)
    except (TypeError, ValueError):
        x = math.nan
    if not (lo < x <= hi):
        raise UsageError(f"{opt}: expected a number of {what} in ({lo:g}, {hi:g}], got '{text}'")
    return x


@dataclasses.dataclass
class Config:
    cmd: trials.Command
    argv: list                 # the locklab command line (for the JSON)
    locks: list
    repeat: int = None         # --repeat, or None: planned from the budget
    budget_s: float = DEFAULT_BUDGET_MIN * 60
    budget_given: bool = False
    timeout_s: float = None    # --timeout, or None: from the profile run
    check: str = None          # None, "-" (stdout) or a file
    force: bool = False
    seed: int = 0
    top: int = DEFAULT_TOP
    out_dir: str = ""
    metric_desc: dict = None
    app: str = None
    progress: bool = True
    preload: str = ""


def _default_out():
    ts = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return os.path.join("results", f"advise-{ts}")


def _app_command(ns, workdir):
    from . import apps
    names = apps.app_names()
    if ns.app not in names:
        raise UsageError(f"--app: expected one of {', '.join(names)}, got '{ns.app}'")
    app = next(a for a in apps.APPS if a.name == ns.app)
    why = apps.missing(app)
    bench = ""
    if app.name.startswith("lab-"):
        from .driver import find_driver
        bench = find_driver()
    if why:
        raise UsageError(f"--app {app.name}: cannot run here: {why}")
    if ns.check_output is not None:
        raise UsageError(f"--check-output: --app {app.name} decides it (the output of a "
                         "deterministic app is always checked)")
    if ns.metric is not None or ns.direction is not None:
        opt = "--metric" if ns.metric is not None else f"--{ns.direction}-is-better"
        raise UsageError(f"{opt}: --app {app.name} brings its own metric and direction (`locklab "
                         "apps` shows them)")
    return app.make(apps.Ctx(workdir=workdir, quick=ns.quick, bench=bench))


def configure(ns, argv, workdir):
    """Every argument checked before anything runs; the Config, or UsageError (exit 2) / 126 / 127."""
    preload = shim.find_preload()
    shim.find_exec()
    program = list(ns.command)
    if program and program[0] == "--":
        program = program[1:]
    if ns.app and program:
        raise UsageError(f"--app: give either --app NAME or -- CMD ARGS, not both (got --app {ns.app} "
                         f"and {program[0]})")
    if ns.quick and not ns.app:
        raise UsageError("--quick: only with --app NAME (the app's small input)")
    # the cheap checks first, so that a typo is reported before a command is looked up
    if ns.locks is not None:
        locks = split_list(ns.locks, "--locks")
        trials.check_variants(locks, preload, allow_none=False, opt="--locks")
    else:
        locks = shim.supported_locks(preload)
    locks = [BASELINE] + [x for x in locks if x != BASELINE]
    if len(locks) < 2:
        raise UsageError(f"--locks: expected at least one lock besides {BASELINE} (the baseline), "
                         f"got '{ns.locks}'")
    repeat = None
    if ns.repeat is not None:
        repeat = parse_positive_int(ns.repeat, "--repeat", lo=MIN_REPEAT, hi=MAX_REPEAT)
    budget_given = ns.budget is not None
    budget = _number(ns.budget, "--budget", 0, MAX_BUDGET_MIN, "minutes") if budget_given \
        else DEFAULT_BUDGET_MIN
    timeout = _number(ns.timeout, "--timeout", 0, 86400, "seconds") if ns.timeout is not None \
        else None
    seed = parse_positive_int(ns.seed, "--seed", lo=0, hi=2**63 - 1)
    top = parse_positive_int(ns.top, "--top", lo=1, hi=1000)
    if ns.out is not None and (not ns.out or os.path.exists(ns.out) and not os.path.isdir(ns.out)):
        raise UsageError(f"--out: expected a directory, got '{ns.out}'")
    if ns.app:
        cmd = _app_command(ns, workdir)
        check = "-" if cmd.deterministic else None
        metric_desc = {"kind": "app"}
        target = cmd.service.argv[0] if cmd.service else cmd.argv[0]
        shim.check_interposable(shim.resolve_command([target], "advise"), what="advise")
        cmd.keep_output = bool(check)
    else:
        if not program:
            raise UsageError("advise: expected a command after -- (or --app NAME), got nothing")
        metric, metric_desc = parse_metric(ns.metric, ns.direction)
        check = ns.check_output
        if check is not None and check != "-":
            if not check.strip() or os.path.isdir(check):
                raise UsageError(f"--check-output: expected a file the program writes, got '{check}'")
            if os.path.lexists(check):
                raise UsageError(f"--check-output {check}: the file exists already; each run must "
                                 "write it afresh, so remove it (or name another file) first")
        exe = shim.resolve_command(program, "advise")
        shim.check_interposable(exe, what="advise")
        cmd = trials.Command("advise", program, cwd=os.getcwd(), deterministic=check is not None,
                             fingerprint="stdout" if check in (None, "-") else check,
                             metric=metric, keep_output=check is not None)
    return Config(cmd=cmd, argv=list(argv), locks=locks, repeat=repeat, budget_s=budget * 60,
                  budget_given=budget_given, timeout_s=timeout, check=check, force=ns.force,
                  seed=seed, top=top, out_dir=ns.out or _default_out(), metric_desc=metric_desc,
                  app=ns.app, progress=not ns.no_progress, preload=preload)


# ------------------------------------------------------------------------------------------------
# the plan

def _fmt_s(s):
    return shim.fmt_ns(s * 1e9) if s is not None else "-"


def plan_repeats(first_s, n_locks, budget_s, repeat=None, budget_given=False):
    """{repeat, affordable, estimated_s, ...}: R runs of each of n_locks, plus two profile runs
    (glibc's, done, and the best lock's), each taking about first_s; UsageError when the budget does
    not fit MIN_REPEAT (or the asked --repeat, with an explicit --budget), saying what it needs."""
    per_repeat = n_locks * first_s
    overhead = 2 * first_s

    def need(r):
        return overhead + r * per_repeat

    affordable = MAX_REPEAT if per_repeat <= 0 else \
        max(0, min(MAX_REPEAT, int((budget_s - overhead) // per_repeat)))
    budget_txt = f"--budget {budget_s / 60:g}" if budget_given else \
        f"the default budget ({budget_s / 60:g} minutes)"

    def too_small(r, what):
        mins = need(r) / 60
        return UsageError(f"{budget_txt} is too small for {what}: the first run took "
                          f"{_fmt_s(first_s)}, so {r} repeats need about {mins:.2g} minutes ({r} x "
                          f"{n_locks} runs + 2 profile runs); give --budget {math.ceil(mins)}"
                          f"{' or fewer --locks' if n_locks > 2 else ''}")

    if repeat is not None:
        if budget_given and repeat > affordable:
            raise too_small(repeat, f"--repeat {repeat} of {n_locks} locks")
        r = repeat
    else:
        if affordable < MIN_REPEAT:
            raise too_small(MIN_REPEAT, f"{MIN_REPEAT} repeats of {n_locks} locks")
        r = min(affordable, MAX_AUTO_REPEAT)
    return {"first_run_s": first_s, "repeat": r, "repeat_given": repeat is not None,
            "affordable_repeat": affordable, "budget_s": budget_s, "budget_given": budget_given,
            "runs": r * n_locks, "estimated_s": need(r)}


def plan_line(plan, n_locks):
    r = plan["repeat"]
    line = (f"{r} repeats x {n_locks} locks = {plan['runs']} runs, about "
            f"{_fmt_s(plan['estimated_s'])} with the profile runs (the first run took "
            f"{_fmt_s(plan['first_run_s'])})")
    if plan["repeat_given"]:
        if plan["budget_given"]:
            line += f"; the budget of {plan['budget_s'] / 60:g} minutes affords " \
                    f"{plan['affordable_repeat']}"
    else:
        line += f"; the budget of {plan['budget_s'] / 60:g} minutes affords " \
                f"{plan['affordable_repeat']}"
        if plan["affordable_repeat"] > r:
            line += f", using {r} (--repeat for more)"
    if r < 4:
        line += ("; with 3 repeats no lock can be judged faster or slower (Mann-Whitney needs 4 "
                 "runs per side for p < 0.05)")
    return line


# ------------------------------------------------------------------------------------------------
# the profile

def contention(profiles, wall_s):
    """Whether locks can matter, from a run's profiles: {verdict, wait_share, wait_ns, ...,
    hottest}. verdict: "matters", "does-not-matter" (total wait under WAIT_SHARE of the run, or no
    mutex at all) or "unknown" (no profile was written)."""
    out = {"threshold": WAIT_SHARE, "processes": len(profiles), "mutexes": 0, "acquisitions": 0,
           "contended": 0, "wait_ns": 0, "wall_s": wall_s, "wait_share": None, "hottest": None}
    if not profiles:
        out["verdict"] = "unknown"
        return out
    for d in profiles:
        tot = d.get("totals") or {}
        for k, src in (("mutexes", "mutexes"), ("acquisitions", "acquisitions"),
                       ("contended", "contended"), ("wait_ns", "wait_ns")):
            out[k] += int(tot.get(src) or 0)
    out["wait_share"] = out["wait_ns"] / (wall_s * 1e9) if wall_s and wall_s > 0 else 0.0
    top = shim.top_locks(profiles, 1)
    out["hottest"] = top[0] if top else None
    out["verdict"] = "matters" if out["wait_share"] >= WAIT_SHARE else "does-not-matter"
    return out


def _pct(share):
    if share is None:
        return "?"
    p = share * 100
    if p == 0:
        return "0 %"
    return "< 0.01 %" if p < 0.01 else f"{p:.3g} %"


def contention_sentence(c):
    if c["verdict"] == "unknown":
        return ("no lock profile was written (the program left without running its exit handlers, "
                "e.g. with _exit, or died of a signal): cannot tell whether locks matter")
    h = c["hottest"]
    if h is None:
        return ("locks do not matter for this program: it used no pthread mutex (the lock profile of "
                "its run on glibc lists none)")
    matters = c["verdict"] == "matters"
    head = "locks matter for this program" if matters else "locks do not matter for this program"
    return (f"{head}: its mutexes waited {_pct(c['wait_share'])} of its {_fmt_s(c['wall_s'])} run "
            f"on glibc (summed over threads; locks count from {WAIT_SHARE * 100:g} %); the hottest, "
            f"{h['site_text']}, had {h['contended']:,} of {h['acquisitions']:,} acquisitions "
            f"contended and {shim.fmt_ns(h['wait_ns_total'])} total wait")


def _profile_doc(cfg, lock, trial, profiles):
    return {"schema": shim.SCHEMA_RUN, "command": list(cfg.cmd.argv), "lock": lock,
            "exit_status": trial.get("status"),
            "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "processes": profiles}


def _public(trial):
    """A trial record for the JSON: without the path of a kept output file."""
    return {k: v for k, v in trial.items() if k != "output_path"}


def profile_run(cfg, lock, workdir, timeout):
    """One run of the command on `lock` with the lock profile: (trial, profiles)."""
    stat_dir = os.path.join(workdir, f"stat-{lock}")
    os.makedirs(stat_dir, exist_ok=True)
    cmd = dataclasses.replace(cfg.cmd, name="profile", timeout=timeout)
    _clear_output_file(cfg)
    exec_path = shim.find_exec()
    t = trials.run_trial(cmd, lock, 0, workdir, exec_path, cfg.preload, stat_dir=stat_dir)
    # locklab-exec, which starts the program, runs with the program's environment and so profiles
    # itself too (no mutex): it is not part of the program
    real = os.path.realpath(exec_path)
    return t, [d for d in shim.load_profiles(stat_dir)
               if os.path.realpath(d.get("exe") or "") != real or d.get("mutexes")]


def _write_profile(cfg, lock, trial, profiles):
    name = f"profile-{lock}.json"
    _dump(_profile_doc(cfg, lock, trial, profiles), os.path.join(cfg.out_dir, name))
    return name


def profile_summary(cfg, lock, trial, profiles):
    c = contention(profiles, trial.get("wall_s"))
    return {"lock": lock, "run": _public(trial), "contention": c,
            "top": shim.top_locks(profiles, cfg.top)}


# ------------------------------------------------------------------------------------------------
# checking each run

def _clear_output_file(cfg):
    """Remove --check-output FILE left by an earlier run (it did not exist when advise started,
    so it is ours): a run that does not write it must not be judged by the previous run's."""
    if cfg.check not in (None, "-"):
        p = os.path.join(cfg.cmd.cwd or ".", cfg.check)
        if os.path.lexists(p):
            os.unlink(p)


def _metric_problem(cfg, t, where):
    """What went wrong reading the metric of a run that exited 0, in words."""
    m = cfg.cmd.metric
    if m.regex is not None and str(t.get("error", "")).endswith("not found in the output"):
        return f"--metric regex:{m.regex}: matched nothing in the output of {where}"
    return f"{t.get('error')}, reading the output of {where}"


def _tail_block(text):
    lines = _last_lines(text)
    return "\n".join("  | " + ln for ln in lines) if lines else "  | (no output)"


def _prog(cfg):
    return cfg.app or os.path.basename(cfg.cmd.argv[0])


def _first_difference(a, b):
    """Where two files first differ, in words."""
    if b is None or not os.path.exists(b):
        return "the run did not write it"
    with open(a, "rb") as fa, open(b, "rb") as fb:
        la, lb = fa.read().split(b"\n"), fb.read().split(b"\n")
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return (f"first difference at line {i + 1}: glibc {x[:100].decode(errors='replace')!r}, "
                    f"this run {y[:100].decode(errors='replace')!r}")
    return f"one is a prefix of the other ({len(la)} against {len(lb)} lines)"


def _keep_outputs(cfg, ref_path, trial):
    """Copy glibc's output and this run's into the out dir; their names."""
    os.makedirs(cfg.out_dir, exist_ok=True)
    kept = []
    for src, name in ((ref_path, "output-glibc"), (trial.get("output_path"),
                                                   f"output-{trial['variant']}-r{trial['repeat'] + 1}")):
        if src and os.path.exists(src):
            dst = os.path.join(cfg.out_dir, name)
            shutil.copyfile(src, dst)
            kept.append(dst)
    return kept


def check_trial(cfg, t, ref, repeat, label=None):
    """None when the run may count; else the stop record {reason, lock, repeat, status,
    stderr_tail} (a timed-out run of a lock other than glibc is not a stop: the caller drops the
    lock). label names the run in messages (default: "LOCK (repeat K of R)")."""
    lock, k = t["variant"], t["repeat"] + 1
    where = label or f"{lock} (repeat {k} of {repeat})"
    prog = _prog(cfg)
    base = {"lock": lock, "repeat": k, "status": t.get("status"), "stderr_tail": t.get("stderr_tail"),
            "tail_of": "output" if t.get("status") == 0 else "stderr"}
    if t.get("timed_out"):
        if lock != BASELINE:
            return None
        return dict(base, reason=f"{prog} timed out on glibc itself (repeat {k} of {repeat}) after "
                    f"{cfg.cmd.timeout:g} s, while its first run took {_fmt_s(ref['wall_s'])}: its "
                    "run time varies too much for advice here (--timeout sets the limit)")
    if not t.get("ok"):
        if t.get("status") == 0:
            # it exited 0 but the metric could not be read from its output
            return dict(base, reason=f"{_metric_problem(cfg, t, where)}, though glibc's run had the "
                        "metric: the program behaves differently on this lock")
        other = ", while it succeeds on glibc" if lock != BASELINE else \
            " (it succeeded in the first run: the program fails intermittently)"
        return dict(base, reason=f"{prog} failed on {where}: {t.get('error')}{other}; a bug in the "
                    "lock or in the program, so the advice stops (never a silent skip)")
    if cfg.check is not None and t.get("digest") != ref.get("digest"):
        what = "stdout" if cfg.check == "-" else f"file {cfg.check}"
        diff = _first_difference(ref["output_path"], t.get("output_path"))
        kept = _keep_outputs(cfg, ref["output_path"], t)
        keep = f"; kept: {', '.join(kept)}" if kept else ""
        if lock == BASELINE:
            return dict(base, reason=f"--check-output: glibc's own runs differ in their {what} "
                        f"(repeat {k} against the first run): the program is not deterministic, so "
                        f"its output cannot judge the locks ({diff}{keep})")
        return dict(base, reason=f"--check-output: the {what} of {prog} on {where} differs from "
                    f"glibc's: {diff}{keep}")
    return None


# ------------------------------------------------------------------------------------------------
# ranking and the recommendation

def _speedup(ratio, hib):
    """Times better than glibc from median(lock) / median(glibc)."""
    if ratio is None or ratio <= 0:
        return None
    return ratio if hib else 1.0 / ratio


def _speedup_ci(ci, hib):
    if not ci or ci[0] is None or ci[1] is None or ci[0] <= 0 or ci[1] <= 0:
        return None
    return [ci[0], ci[1]] if hib else [1.0 / ci[1], 1.0 / ci[0]]


def rank(an, locks, hib, timed_out):
    """One row per lock, best first: glibc's comparison figures against each lock, speedup = times
    better than glibc; timed-out locks and locks without a result last."""
    comps = {c["variant"]: c for c in an["comparisons"]}
    base_cpu = an["stats"].get(BASELINE, {}).get("cpu_s_median")
    rows = []
    for lk in locks:
        s = an["stats"].get(lk, {})
        row = {"lock": lk, "runs": s.get("runs", 0), "n": s.get("n", 0), "failed": s.get("failed", 0)}
        for k in ("median", "ci95", "min", "max", "cpu_s_median", "wall_s_median"):
            if k in s:
                row[k] = s[k]
        cpu = s.get("cpu_s_median")
        row["cpu_ratio"] = cpu / base_cpu if cpu is not None and base_cpu else None
        if lk == BASELINE:
            row.update(verdict="baseline", speedup=1.0 if "median" in s else None,
                       speedup_ci95=None)
        else:
            c = comps.get(lk)
            if c:
                row.update(ratio=c["ratio"], ratio_ci95=c["ratio_ci95"],
                           mannwhitney_p=c["mannwhitney_p"], overlap=c["overlap"],
                           verdict=c["verdict"], speedup=_speedup(c["ratio"], hib),
                           speedup_ci95=_speedup_ci(c["ratio_ci95"], hib))
            else:
                row.update(verdict="no result", speedup=None, speedup_ci95=None)
            if lk in timed_out:
                row["verdict"] = "timed out"
                row["timed_out"] = timed_out[lk]
        rows.append(row)

    def key(r):
        last = r["verdict"] in ("timed out", "no result") or r["speedup"] is None
        return (last, -(r["speedup"] or 0.0))

    rows.sort(key=key)
    for i, r in enumerate(rows):
        r["rank"] = i + 1
    return rows


def _word(metric_desc):
    return "faster" if metric_desc.get("kind") == "time" or metric_desc.get("unit") == "s" else "better"


def recommend(rows, stats, hib, better_word="faster"):
    """The one-sentence recommendation and what it rests on."""
    cands = [r for r in rows if r["lock"] != BASELINE]
    faster = [r for r in cands if r["verdict"] == "faster" and r.get("speedup")]
    if faster:
        w = max(faster, key=lambda r: r["speedup"])
        tied = [r["lock"] for r in faster if r is not w and st.compare_samples(
            stats[r["lock"]]["values"], stats[w["lock"]]["values"], hib)["verdict"] == "tied"]
        ci = w.get("speedup_ci95")
        cit = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
        s = (f"use {w['lock']}: {w['speedup']:.2f}x{cit} {better_word} than glibc, distributions "
             "do not overlap")
        if tied:
            s += f" ({', '.join(tied)} {'is' if len(tied) == 1 else 'are'} tied with it)"
        if w.get("cpu_ratio") and w["cpu_ratio"] >= CPU_NOTE_RATIO:
            s += f"; it uses {w['cpu_ratio']:.1f}x glibc's CPU time per run"
        return {"lock": w["lock"], "sentence": s, "speedup": w["speedup"], "speedup_ci95": ci,
                "mannwhitney_p": w.get("mannwhitney_p"), "tied_with": tied}
    counts = {}
    for r in cands:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    if set(counts) == {"tied"}:
        why = "all tied"
    elif len(counts) == 1:
        why = f"all {next(iter(counts))}"
    else:
        why = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: ORDER.index(kv[0])
                                                      if kv[0] in ORDER else 99))
    return {"lock": None, "sentence": f"no lock is better than glibc here ({why})", "speedup": None,
            "speedup_ci95": None, "mannwhitney_p": None, "tied_with": []}


ORDER = ["tied", "slower", "timed out", "no result"]

# The forms a recommendation takes (the tests hold every sentence to one of them).
SENTENCE_FORMS = [
    r"use (?P<lock>\S+): (?P<x>\d+\.\d\d)x( \[\d+\.\d\d, \d+\.\d\d\])? (faster|better) than glibc, "
    r"distributions do not overlap( \(.+ (is|are) tied with it\))?(; it uses \d+\.\dx glibc's CPU "
    r"time per run)?",
    r"no lock is better than glibc here \((all tied|all slower|all timed out|all no result|"
    r"(\d+ (tied|slower|timed out|no result)(, )?)+)\)",
    r"locks do not matter for this program: .+",
]


# ------------------------------------------------------------------------------------------------
# output

def _fmt_metric(x, unit):
    if x is None:
        return "-"
    if unit == "s":
        return shim.fmt_ns(x * 1e9)
    from .tables import fmt_num
    return fmt_num(x) + (f" {unit}" if unit else "")


def ranked_table(doc):
    from rich.markup import escape
    from rich.table import Table

    from .tables import fmt_p
    m = doc["metric"]
    unit = m.get("unit", "")
    t = Table(title=escape(f"{_prog_name(doc)}: {m['name']} ({'higher' if m['higher_is_better'] else 'lower'}"
                           f" is better), {doc['plan']['repeat']} runs per lock, interleaved and "
                           "shuffled"), title_justify="left",
              caption=escape("vs glibc: times better than glibc (ratio of medians) with its 95% "
                             "bootstrap CI; p: Mann-Whitney, two-sided; overlap: of the [min, max] "
                             "ranges; faster/slower only when they do not overlap and p < 0.05"),
              caption_justify="left")
    for c in ("#", "lock", "runs", "median", "95% CI", "vs glibc", "its 95% CI", "p", "overlap",
              "verdict", "CPU/run"):
        t.add_column(c, justify="left" if c in ("lock", "verdict", "overlap") else "right")
    for r in doc["ranking"]:
        ci = r.get("ci95")
        sci = r.get("speedup_ci95")
        t.add_row(str(r["rank"]), escape(r["lock"]), f"{r['n']}/{r['runs']}",
                  _fmt_metric(r.get("median"), unit),
                  f"[{_fmt_metric(ci[0], unit)}, {_fmt_metric(ci[1], unit)}]" if ci else "-",
                  f"{r['speedup']:.2f}x" if r.get("speedup") else "-",
                  f"[{sci[0]:.2f}, {sci[1]:.2f}]" if sci else "-",
                  fmt_p(r.get("mannwhitney_p")) if "mannwhitney_p" in r else "-",
                  "-" if "overlap" not in r else ("yes" if r["overlap"] else "no"),
                  escape(r["verdict"]), _fmt_s(r.get("cpu_s_median")))
    return t


def _prog_name(doc):
    return doc.get("app") or os.path.basename(doc["program"][0])


def _print_profile(con, prof, title):
    if prof["contention"]["verdict"] == "unknown":
        return      # no profile: the contention sentence says so
    rows = prof.get("top") or []
    if rows:
        con.print(shim.profile_table(rows, title, show_process=prof["contention"]["processes"] > 1))
    else:
        con.print(f"{title}: no mutex in the profile", markup=False)


def _dump(doc, path):
    """Write JSON atomically with results' writer. Not results.dump: the tests check everything
    that writes against the results schema (python/tests/conftest.py); test_advise.py checks what
    this writes against advise's."""
    results_mod.write_json_atomic(doc, path)


def write_doc(cfg, doc):
    path = os.path.join(cfg.out_dir, "advise.json")
    _dump(doc, path)
    return path


# ------------------------------------------------------------------------------------------------
# the advice

def _new_doc(cfg):
    from .apps import _machine
    from .version import provenance
    m = cfg.cmd.metric
    return {
        "schema": SCHEMA, "command": command_line(cfg.argv), "program": list(cfg.cmd.argv),
        "app": cfg.app, "service": list(cfg.cmd.service.argv) if cfg.cmd.service else None,
        "cwd": os.getcwd(),
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "locklab": provenance(), "machine": _machine(),
        "metric": {**m.describe(), **cfg.metric_desc},
        "check_output": None if cfg.check is None else ("stdout" if cfg.check == "-" else cfg.check),
        "baseline": BASELINE, "locks": list(cfg.locks), "seed": cfg.seed,
        "order": {"repeats_outer": True, "shuffle": True, "seed": cfg.seed},
        "plan": None, "timeout_s": None, "contention": None, "profiles": {}, "runs": [],
        "stats": {}, "comparisons": [], "ranking": [], "timed_out": {}, "identity": None,
        "outcome": None, "recommendation": None, "stopped": None,
    }


def _stop(cfg, doc, stop, con):
    """Write what was measured with the reason, then raise Stopped (exit 1): one line, the end of
    the run's stderr (or output), and where the file is."""
    tail_of = stop.pop("tail_of", "stderr")
    _clear_output_file(cfg)     # a failed run's --check-output FILE: ours, and in the user's way
    doc["outcome"] = "stopped"
    doc["stopped"] = stop
    path = write_doc(cfg, doc)
    tail = stop.get("stderr_tail")
    msg = f"advise: {stop['reason']}"
    if tail is not None:
        msg += f"\nlast lines of its {tail_of}:\n" + _tail_block(tail)
    msg += f"\n(wrote {path})"
    raise Stopped(msg)


def _progress(cfg, total):
    if not cfg.progress:
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    prog = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    console=Console(stderr=True), transient=True)
    prog.start()
    return prog, prog.add_task("advise", total=total)


def run_advise(ns, argv, console=None):
    from .tables import console as make_console
    con = console or make_console()
    err = make_console(stderr=True)
    workdir = tempfile.mkdtemp(prefix="locklab-advise-")
    try:
        cfg = configure(ns, argv, workdir)
        return _advise(cfg, workdir, con, err)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _say(err, text):
    err.print(f"locklab advise: {text}", markup=False, soft_wrap=True)


def _advise(cfg, workdir, con, err):
    doc = _new_doc(cfg)
    prog = _prog(cfg)
    metric = cfg.cmd.metric

    # 1. the profile run on glibc
    first_timeout = cfg.timeout_s or cfg.budget_s
    _say(err, f"the first run: {prog} on glibc with the lock profile ...")
    ref, profiles = profile_run(cfg, BASELINE, workdir, first_timeout)
    if ref.get("timed_out"):
        if cfg.timeout_s:
            raise UsageError(f"--timeout {cfg.timeout_s:g}: the first run (on glibc) did not finish "
                             "within it; give a larger --timeout")
        n = len(cfg.locks)
        budget_txt = f"--budget {cfg.budget_s / 60:g}" if cfg.budget_given else \
            f"the default budget ({cfg.budget_s / 60:g} minutes)"
        raise UsageError(f"{budget_txt} is too small: the first run (on glibc) did not finish within "
                         f"it ({_fmt_s(first_timeout)}), so {MIN_REPEAT} repeats of {n} locks would "
                         f"need more than {(MIN_REPEAT * n + 2) * first_timeout / 60:.2g} minutes "
                         f"({MIN_REPEAT} x {n} runs + 2 profile runs); give a larger --budget")
    if not ref.get("ok") and ref.get("status") == 0:
        raise UsageError(_metric_problem(cfg, ref, "the first run (on glibc, with the lock profile)")
                         + ", so it cannot compare the locks; last lines of that output:\n"
                         + _tail_block(ref.get("stderr_tail")))
    if not ref.get("ok"):
        doc["profiles"][BASELINE] = profile_summary(cfg, BASELINE, ref, profiles)
        doc["contention"] = doc["profiles"][BASELINE]["contention"]
        _stop(cfg, doc, {"reason": f"{prog} failed on glibc (the first run, with the lock profile): "
                         f"{ref.get('error')}; advise needs a program that succeeds on glibc",
                         "lock": BASELINE, "repeat": 0, "status": ref.get("status"),
                         "stderr_tail": ref.get("stderr_tail")}, con)
    if cfg.check not in (None, "-") and ref.get("digest") is None:
        raise UsageError(f"--check-output {cfg.check}: the first run (on glibc) did not write it")
    os.makedirs(cfg.out_dir, exist_ok=True)
    summ = profile_summary(cfg, BASELINE, ref, profiles)
    summ["file"] = _write_profile(cfg, BASELINE, ref, profiles)
    doc["profiles"][BASELINE] = summ
    c = summ["contention"]
    doc["contention"] = c
    _print_profile(con, summ, f"glibc: most contended locks (profile run, {_fmt_s(ref['wall_s'])} "
                              f"wall, {_fmt_s(ref['cpu_s'])} CPU)")
    sentence = contention_sentence(c)
    con.print(sentence, markup=False, soft_wrap=True)

    if c["verdict"] == "does-not-matter" and not cfg.force:
        doc["outcome"] = "locks-do-not-matter"
        doc["recommendation"] = {"lock": None, "sentence": sentence, "speedup": None,
                                 "speedup_ci95": None, "mannwhitney_p": None, "tied_with": []}
        _remove_kept(ref)
        path = write_doc(cfg, doc)
        _say(err, "stopping here: --force measures every lock anyway (the profile sees only "
                  "processes that leave through exit(): work done in processes that end with _exit() "
                  "or a signal, such as some programs' forked workers, is not in it)")
        con.print(f"wrote {path}", markup=False)
        return 0
    if c["verdict"] == "unknown":
        _say(err, "measuring every lock anyway")
    elif c["verdict"] == "does-not-matter":
        _say(err, "--force: measuring every lock anyway")

    # 2. the plan
    plan = plan_repeats(ref["wall_s"], len(cfg.locks), cfg.budget_s, cfg.repeat, cfg.budget_given)
    doc["plan"] = plan
    timeout = cfg.timeout_s or max(MIN_TIMEOUT_S, TIMEOUT_FACTOR * ref["wall_s"])
    doc["timeout_s"] = timeout
    cmd = dataclasses.replace(cfg.cmd, timeout=timeout)
    cfg.cmd = cmd
    repeat = plan["repeat"]
    _say(err, "plan: " + plan_line(plan, len(cfg.locks)) + f"; a run may take {_fmt_s(timeout)}")

    # 3. the runs, each checked as it finishes
    todo = trials.schedule(cfg.locks, repeat, cfg.seed)
    bar, task = _progress(cfg, len(todo))
    timed_out = {}
    exec_path = shim.find_exec()
    try:
        for r, lock in todo:
            if lock in timed_out:
                if bar:
                    bar.advance(task)
                continue
            if bar:
                bar.update(task, description=f"{prog} on {lock} #{r + 1}/{repeat}")
            _clear_output_file(cfg)
            t = trials.run_trial(cmd, lock, r, workdir, exec_path, cfg.preload)
            stop = check_trial(cfg, t, ref, repeat)
            _remove_kept(t)
            doc["runs"].append(_public(t))
            if bar:
                bar.advance(task)
            if stop:
                if bar:
                    bar.stop()
                    bar = None
                _stop(cfg, doc, stop, con)
            if t.get("timed_out"):
                timed_out[lock] = {"repeat": r + 1, "timeout_s": timeout}
                doc["timed_out"] = timed_out
                _say(bar.console if bar else err,
                     f"{lock} timed out after {_fmt_s(timeout)} in repeat {r + 1} (glibc's first "
                     f"run took {_fmt_s(ref['wall_s'])}): left out of the remaining repeats and "
                     "ranked last; a hang is a bug in the lock or the program, and a slowdown this "
                     "large rules the lock out either way")
    except KeyboardInterrupt:
        if bar:
            bar.stop()
            bar = None
        doc["outcome"] = "interrupted"
        path = write_doc(cfg, doc)
        _say(err, f"interrupted: the {len(doc['runs'])} runs measured are in {path}")
        raise
    finally:
        if bar:
            bar.stop()
    _clear_output_file(cfg)

    # 4. statistics, ranking, recommendation
    an = trials.analyse(doc["runs"], cfg.locks, BASELINE, metric.higher_is_better)
    doc["stats"], doc["comparisons"] = an["stats"], an["comparisons"]
    if cfg.check is not None:
        doc["identity"] = dict(an["identity"], reference=ref.get("digest"))
    rows = rank(an, cfg.locks, metric.higher_is_better, timed_out)
    doc["ranking"] = rows
    rec = recommend(rows, an["stats"], metric.higher_is_better, _word(doc["metric"]))

    # 5. the best-ranked lock's profile
    best = next((r["lock"] for r in rows if r["lock"] != BASELINE and r["verdict"] not in
                 ("timed out", "no result")), None)
    if best is not None:
        _say(err, f"profile run on {best}, the best-ranked lock ...")
        bt, bprof = profile_run(cfg, best, workdir, timeout)
        stop = check_trial(cfg, bt, ref, repeat, label=f"{best} (its profile run)")
        _remove_kept(bt)
        if stop:
            _stop(cfg, doc, stop, con)
        if bt.get("timed_out"):
            _say(err, f"{best}'s profile run timed out after {_fmt_s(timeout)}: its profile is "
                 "incomplete")
        bs = profile_summary(cfg, best, bt, bprof)
        bs["file"] = _write_profile(cfg, best, bt, bprof)
        doc["profiles"][best] = bs
    _remove_kept(ref)
    _clear_output_file(cfg)
    doc["outcome"] = "recommend" if rec["lock"] else "keep-glibc"
    doc["recommendation"] = rec
    path = write_doc(cfg, doc)

    con.print(ranked_table(doc))
    if best is not None:
        _print_profile(con, doc["profiles"][best], f"{best}: most contended locks (profile run)")
    if cfg.check is not None:
        ident = doc["identity"]
        con.print(f"output: identical to glibc's in all {ident['checked_runs']} runs "
                  f"(sha256 {str(ident['reference'])[:16]}...)", markup=False)
    con.print(f"recommendation: {rec['sentence']}", markup=False, soft_wrap=True)
    con.print(f"wrote {path}", markup=False)
    return 0


def _remove_kept(t):
    """Remove a run's kept output (trials.Command.keep_output) once it has been compared."""
    p = t.get("output_path")
    if p and os.path.exists(p):
        os.unlink(p)


def cmd_advise(ns, argv):
    return run_advise(ns, argv)


# ------------------------------------------------------------------------------------------------
# reading advise files (locklab report)

@lru_cache(maxsize=None)
def _validator():
    import jsonschema
    with open(SCHEMA_FILE, encoding="utf-8") as f:
        return jsonschema.Draft202012Validator(json.load(f))


def check(doc):
    """None when doc satisfies schema/advise.schema.json, else the problem in words (the deepest
    field, as results.check says it)."""
    errors = list(_validator().iter_errors(doc))
    if not errors:
        return None
    best = max(errors, key=lambda e: (len(e.absolute_path), e.validator != "required"))
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" \
        if len(errors) > 1 else ""
    return results_mod.describe_error(best) + more


def validate(doc, path="advise.json"):
    """FileError unless doc is a valid locklab-advise/1 document."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise FileError(path, f"not an advise file (expected \"schema\": \"{SCHEMA}\")")
    problem = check(doc)
    if problem:
        raise FileError(path, f"malformed advise file: {problem}")
    return doc


def load(path):
    """Parse and validate one advise file; FileError("FILE: problem") on anything wrong."""
    return validate(results_mod.parse(path, "an advise file"), path)


__all__ = ["SCHEMA", "add_arguments", "cmd_advise", "run_advise", "parse_metric", "plan_repeats",
           "contention", "rank", "recommend", "load", "validate", "check", "SENTENCE_FORMS"]
