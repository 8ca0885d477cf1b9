"""The `locklab` command.

    locklab --version                           version and git commit of locklab and its driver
    locklab list [--json]                       the driver's registry, with availability
    locklab describe                            the driver's workloads and their parameters
    locklab bench WORKLOAD [--lock a,b] [--<param> v1,v2] --repeat R --out F [--baseline NAME]
                 [--shuffle/--no-shuffle] [--seed N] [--resume]
    locklab demo [--out DIR] [--quick] [--resume]   three chosen mutex cells, a headline and a report
    locklab show FILE... [--focus NAME]         the tables of saved results files
    locklab compare A.json B.json [--lock NAME] [--format changelog|markdown|csv|json]
    locklab report FILES... -o DIR [--focus NAME]   static HTML report (python/locklab/report.py)
    locklab run [--lock L] [--stat] [--out F] -- CMD ARGS   a program on a shim lock (shim.py)
    locklab apps [--quick] [--apps A,B] [--locks L,M]       real programs on every lock (apps.py)
    locklab advise [--locks L,M] [--metric M] [--budget MIN] -- CMD ARGS   which lock should CMD use (advise.py)

The options of `bench WORKLOAD` are generated from `locklab-bench describe`: one per described parameter,
validated against its type and range before anything runs.  Exit status: 0 ok, 1 the driver failed,
2 bad input (one line: "locklab: --threads: expected an integer in [1, 4096], got '0'"), 130 Ctrl-C
(what was measured is kept: see runner.measure).

Every results file locklab reads (show, compare, report, bench --resume) is validated against the
published JSON Schema (results.py); a bad one is refused with one line naming the field.
"""

import argparse
import datetime as _dt
import os
import sys

from . import runner
from .driver import Driver
from .errors import DriverError, LocklabError, UsageError

# The CLI's own bench options; a workload parameter with one of these names is offered as --param-NAME.
RESERVED = {"repeat", "out", "baseline", "shuffle", "no-shuffle", "seed", "locks", "help",
            "no-progress", "resume"}
DEFAULT_REPEAT = 5


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line "locklab: ..." with exit 2 (via UsageError)."""

    def error(self, message):
        if message.startswith("argument "):
            message = message[len("argument "):]
        raise UsageError(message)


class _Version(argparse.Action):
    """--version: this package's version and commit, then the driver's (asked only when wanted)."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, help="print the versions and git commits "
                         "of locklab and of its driver, locklab-bench, and exit")

    def __call__(self, parser, ns, values, option_string=None):
        from .driver import find_driver
        from .version import version_line
        try:
            path = find_driver()
        except UsageError:
            path = None
        print(version_line(path))
        parser.exit(0)


def _top_parser():
    p = _Parser(prog="locklab", description="The locklab contention lab. The C driver "
                "(locklab-bench) measures; this front end runs it, computes statistics and reports.")
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    pl = sub.add_parser("list", help="the algorithm registry with availability")
    pl.add_argument("--json", action="store_true", help="print the driver's JSON as is")
    sub.add_parser("describe", help="the workloads and their parameters")
    pb = sub.add_parser("bench", add_help=False,
                        help="run a workload over locks x params x repeats (see bench WORKLOAD --help)")
    pb.add_argument("workload", nargs="?")
    pb.add_argument("rest", nargs=argparse.REMAINDER)
    pd = sub.add_parser("demo", help="lk_mutex against the locks that matter, in the cells where "
                        "seed 004 says they differ: a headline with verdicts (~3 minutes on 2 cores)")
    pd.add_argument("--out", metavar="DIR", help="output directory (default results/demo-<time>)")
    pd.add_argument("--quick", action="store_true", help="a tiny version that takes seconds "
                    "(for tests: too short for a verdict)")
    pd.add_argument("--resume", action="store_true", help="continue an interrupted demo in --out DIR")
    pd.add_argument("--no-progress", action="store_true", help="no progress bar")
    ps = sub.add_parser("suite", help="every experiment of the source documents (seeds 004, 002, "
                        "000) and issue 11's wide matrix, with HTML report (~55 minutes on 2 cores)")
    ps.add_argument("--out", metavar="DIR", help="output directory (default results/suite-<time>)")
    ps.add_argument("--quick", action="store_true", help="a tiny version that takes seconds")
    ps.add_argument("--only", metavar="A,B", help="run only these experiments (see --list)")
    ps.add_argument("--list", action="store_true", help="list the experiments and exit")
    ps.add_argument("--summarize", metavar="DIR",
                    help="rewrite DIR/summary.md and DIR/report from its results files; run nothing")
    ps.add_argument("--resume", action="store_true", help="continue an interrupted suite in --out "
                    "DIR: complete experiments are kept, the interrupted one resumed")
    ps.add_argument("--retry-busy", default="0", metavar="N",
                    help="every bench's --retry-busy N: measure a run the busy rule flags again, "
                    "up to N times (default 0)")
    ps.add_argument("--seed", metavar="N",
                    help="seed of every bench's lock-order shuffle (default: a fresh one per suite, "
                    "printed and recorded as each results file's order.seed, so that two records "
                    "of the same matrix do not share their run order; --resume reuses the "
                    "interrupted suite's)")
    ps.add_argument("--no-progress", action="store_true", help="no progress bar")
    psh = sub.add_parser("show", help="print the tables of saved results files again")
    psh.add_argument("files", nargs="+", metavar="FILE", help="results files (locklab-results/1)")
    psh.add_argument("--focus", metavar="NAME", help="the lock the headline compares with every "
                     "other lock (default lk_mutex)")
    pc = sub.add_parser("compare", help="baseline A.json vs candidate B.json, changelog style")
    pc.add_argument("a", metavar="A.json", help="baseline results file")
    pc.add_argument("b", metavar="B.json", help="candidate results file")
    pc.add_argument("--lock", help="compare only this lock")
    pc.add_argument("--format", choices=["changelog", "markdown", "csv", "json"],
                    default="changelog")
    from . import apps as _apps, shim as _shim
    prun = sub.add_parser("run", help="run a program on a shim lock (LD_PRELOAD), optionally with "
                          "the lock profile: locklab run [--lock L] [--stat] -- CMD ARGS")
    _shim.add_run_arguments(prun)
    papps = sub.add_parser("apps", help="real programs (pigz, xz, zstd, sysbench, memcached, ...) "
                           "on every shim lock, with statistics and output checks")
    _apps.add_arguments(papps)
    from . import advise as _advise
    padv = sub.add_parser("advise", help="which lock should this program use: its lock profile on "
                          "glibc, then every shim lock, repeated, interleaved and shuffled, ranked "
                          "against glibc with statistics and one sentence of advice")
    _advise.add_arguments(padv)
    pr = sub.add_parser("report", help="HTML/plots report from results files")
    from . import report as _report
    _report.add_arguments(pr)
    pr.set_defaults(_report_run=_report.run)
    return p


# ------------------------------------------------------------------------------------------------
# bench

def _opt(name):
    return f"--param-{name}" if name in RESERVED else f"--{name}"


def _param_help(param, algorithms):
    bits = [param.help]
    if param.type in ("uint", "double"):
        bits.append(f"{'integer' if param.type == 'uint' else 'number'} in "
                    f"[{runner._fmt_bound(param.min)}, {runner._fmt_bound(param.max)}]")
    elif param.type == "alg":
        names = [a["name"] for a in runner.algs_for(param, algorithms) if a.get("available", True)]
        bits.append(f"one of: {', '.join(names)}")
    elif param.choices:
        bits.append(f"one of: {', '.join(param.choices)}")
    if param.default is not None:
        bits.append(f"default {param.default}")
    if param.axis or param.name == "lock":
        bits.append("comma list sweeps")
    return "; ".join(b for b in bits if b)


MAX_RETRY_BUSY = 10


def bench_parser(wl, algorithms):
    p = _Parser(prog=f"locklab bench {wl.name}", description=wl.help,
                epilog=f"metric: {wl.metric} ({'higher' if wl.higher_is_better else 'lower'} is "
                "better). Each (cell, lock, repeat) is one locklab-bench process; repeats are the "
                "outer loop and the lock order is shuffled per cell.")
    lp = wl.lock_param
    if lp is not None:
        p.add_argument("--lock", "--locks", dest="p_lock", metavar="A,B",
                       help=_param_help(lp, algorithms))
    for prm in wl.params:
        if prm.name == "lock":
            continue
        p.add_argument(_opt(prm.name), dest=f"p_{prm.name}",
                       metavar="V1,V2" if prm.axis else "V", help=_param_help(prm, algorithms))
    p.add_argument("--repeat", default=str(DEFAULT_REPEAT),
                   help=f"driver runs per (cell, lock) (default {DEFAULT_REPEAT}; >= 4 is needed "
                   "for Mann-Whitney p < 0.05)")
    p.add_argument("--out", help="results file (default results/WORKLOAD-<time>.json)")
    p.add_argument("--baseline", help="lock the others are compared with (default: the first)")
    p.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=True,
                   help="randomise the lock order within each cell and repeat (default on)")
    p.add_argument("--seed", default="0", help="seed of the lock-order shuffle (default 0)")
    p.add_argument("--resume", action="store_true", help="continue the interrupted bench whose "
                   "runs are in OUT.partial (same options; only the missing runs are measured)")
    p.add_argument("--retry-busy", default="0", metavar="N",
                   help="measure a run again, up to N times, while the busy rule (hostload.py: "
                   "other processes used more than 10%% of the CPU time) flags it; the last try "
                   "is kept (default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def build_plan(wl, algorithms, ns):
    """Validate the parsed bench options against the description; returns a runner.Plan."""
    repeat = runner.parse_positive_int(ns.repeat, "--repeat")
    seed = runner.parse_positive_int(ns.seed, "--seed", lo=0, hi=2**63 - 1)
    retry_busy = runner.parse_positive_int(ns.retry_busy, "--retry-busy", lo=0, hi=MAX_RETRY_BUSY)
    axes, fixed = {}, {}
    for prm in wl.params:
        if prm.name == "lock":
            continue
        text = getattr(ns, f"p_{prm.name}")
        if text is None:
            if prm.required:
                raise UsageError(f"{_opt(prm.name)}: required")
            continue
        opt = _opt(prm.name)
        items = runner.split_list(text, opt)
        if len(items) > 1 and not prm.axis:
            raise UsageError(f"{opt}: expected one value (not a sweepable parameter), got '{text}'")
        vals = [runner.parse_value(prm, t, algorithms, opt) for t in items]
        if len(vals) > 1:
            axes[prm.name] = vals
        else:
            fixed[prm.name] = vals[0]
    # the lock last: a bad value the user typed is reported before a default the build lacks
    locks = []
    lp = wl.lock_param
    if lp is not None:
        text = ns.p_lock if ns.p_lock is not None else lp.default
        if text is None:
            raise UsageError("--lock: required (this workload has no default lock)")
        locks = [runner.parse_value(lp, t, algorithms, "--lock")
                 for t in runner.split_list(text, "--lock")]
    return runner.Plan(wl, locks, axes, fixed, repeat, baseline=ns.baseline, shuffle=ns.shuffle,
                       seed=seed, retry_busy=retry_busy)


def run_plan(plan, driver, argv_for_command, out, progress=True, resume=False, resume_command=None):
    """Execute a plan into the results file `out` (runner.measure: checked before anything runs,
    each run kept as it finishes, Ctrl-C keeps what was measured), print its tables; returns the
    document."""
    from . import tables
    progress = progress and sys.stderr.isatty()  # a progress bar in a pipe or a log is noise
    doc = runner.measure(plan, driver, runner.command_line(argv_for_command), out,
                         progress=progress, resume=resume, resume_command=resume_command)
    tables.print_cells(doc)
    return doc


def _default_out(name):
    ts = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return os.path.join("results", f"{name}-{ts}.json")


def bench_usage(driver):
    names = ", ".join(w.name for w in driver.workloads())
    return ("usage: locklab bench WORKLOAD [--lock A,B] [--PARAM V1,V2 ...] --repeat R --out F\n"
            f"workloads (from locklab-bench describe): {names}\n"
            "options: locklab bench WORKLOAD --help")


def cmd_bench(ns, argv):
    driver = Driver()
    if ns.workload in ("-h", "--help"):
        print(bench_usage(driver))
        return 0
    if ns.workload is None:
        names = ", ".join(w.name for w in driver.workloads())
        raise UsageError(f"bench: expected a workload name ({names}); its options: "
                         "locklab bench WORKLOAD --help")
    wl = driver.workload(ns.workload)
    algorithms = driver.algorithms()
    p = bench_parser(wl, algorithms)
    bns = p.parse_args(ns.rest)
    plan = build_plan(wl, algorithms, bns)
    out = bns.out or _default_out(wl.name)
    # the command recorded in the file, and offered to --resume, is the one typed without --resume
    rec_argv = [a for a in argv if a != "--resume"]
    if bns.out is None:
        rec_argv += ["--out", out]
    run_plan(plan, driver, rec_argv, out, progress=not bns.no_progress, resume=bns.resume)
    print(f"wrote {out}")
    return 0


# ------------------------------------------------------------------------------------------------

def cmd_list(ns):
    from . import shim
    driver = Driver()
    doc = driver.list_doc()
    if ns.json:
        import json
        try:
            shim_doc = shim.shim_locks()
        except UsageError:
            shim_doc = None
        print(json.dumps({**doc, "shim": shim_doc}, indent=1))
        return 0
    from . import tables
    tables.console().print(tables.list_table(doc))
    shim.print_list(tables.console())
    return 0


def cmd_describe(ns):
    from rich.markup import escape
    from rich.table import Table

    from . import tables
    driver = Driver()
    algorithms = driver.algorithms()
    con = tables.console()
    for wl in driver.workloads():
        t = Table(title=escape(f"{wl.name}: {wl.help} [metric {wl.metric}, "
                               f"{'higher' if wl.higher_is_better else 'lower'} is better]"),
                  title_justify="left")
        for col in ("option", "type", "default", "sweep", "help"):
            t.add_column(col)
        for prm in wl.params:
            t.add_row(*(escape(x) for x in (_opt(prm.name), prm.type, str(prm.default), "yes" if
                        (prm.axis or prm.name == "lock") else "", _param_help(prm, algorithms))))
        con.print(t)
    return 0


def cmd_compare(ns):
    from . import compare
    text = compare.run(ns.a, ns.b, ns.lock, ns.format)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def cmd_report(ns):
    rc = ns._report_run(ns)
    return 0 if rc is None else int(rc)


def cmd_show(ns):
    from . import tables
    from .results import load
    docs = [(path, load(path)) for path in ns.files]  # every file checked before any is printed
    con = tables.console()
    for path, doc in docs:
        if len(docs) > 1:
            con.print(f"== {path}", soft_wrap=True, markup=False)
        tables.print_cells(doc, con, focus=ns.focus)
    return 0


def cmd_demo(ns, argv):
    from . import demo
    return demo.run(Driver(), out_dir=ns.out, quick=ns.quick, progress=not ns.no_progress,
                    argv=argv, resume=ns.resume)


def cmd_suite(ns):
    from . import suite
    if ns.list:
        for e in suite.EXPERIMENTS:
            print(f"{e.name:18} locklab bench {e.workload} "
                  f"{' '.join(suite.bench_args(e, e.locks, False))}")
        return 0
    if ns.summarize:
        return suite.summarize(ns.summarize)
    if ns.resume and not ns.out:
        raise UsageError("--resume: needs --out DIR, the directory of the interrupted suite")
    retry = runner.parse_positive_int(ns.retry_busy, "--retry-busy", lo=0, hi=MAX_RETRY_BUSY)
    seed = None if ns.seed is None else runner.parse_positive_int(ns.seed, "--seed", lo=0,
                                                                  hi=2**63 - 1)
    return suite.run(Driver(), out_dir=ns.out, quick=ns.quick, only=ns.only,
                     progress=not ns.no_progress, resume=ns.resume, retry_busy=retry, seed=seed)


def _main(argv):
    if argv and argv[0] == "bench":
        # bench WORKLOAD ...: everything after the workload goes to the parser generated from the
        # workload's description (argparse cannot build options that depend on a positional)
        ns = argparse.Namespace(cmd="bench", workload=argv[1] if len(argv) > 1 else None,
                                rest=argv[2:])
        if ns.workload is not None and ns.workload.startswith("-") and \
                ns.workload not in ("-h", "--help"):
            raise UsageError(f"bench: expected a workload name first, got '{ns.workload}'")
    else:
        ns = _top_parser().parse_args(argv)
    if ns.cmd == "bench":
        return cmd_bench(ns, argv)
    if ns.cmd == "list":
        return cmd_list(ns)
    if ns.cmd == "describe":
        return cmd_describe(ns)
    if ns.cmd == "show":
        return cmd_show(ns)
    if ns.cmd == "compare":
        return cmd_compare(ns)
    if ns.cmd == "report":
        return cmd_report(ns)
    if ns.cmd == "demo":
        return cmd_demo(ns, argv)
    if ns.cmd == "suite":
        return cmd_suite(ns)
    if ns.cmd == "run":
        from . import shim
        return shim.cmd_run(ns)
    if ns.cmd == "apps":
        from . import apps
        return apps.cmd_apps(ns, argv)
    if ns.cmd == "advise":
        from . import advise
        return advise.cmd_advise(ns, argv)
    raise UsageError(f"unknown command '{ns.cmd}'")


def _driver_error(e):
    """A failed driver run.  Bad input the driver caught (exit 2, one line of its own) reads like
    any other bad input: "locklab: --buckets: expected ..., got '3'"; anything else shows the
    driver's stderr, then what failed."""
    err = (e.stderr or "").strip("\n")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    kept = getattr(e, "kept", None)
    if e.driver_status == 2 and len(lines) == 1 and lines[0].startswith("locklab-bench: "):
        print(f"locklab: {lines[0][len('locklab-bench: '):]}", file=sys.stderr)
    else:
        if lines:
            sys.stderr.write("\n".join(ln.rstrip() for ln in err.splitlines()).strip("\n") + "\n")
        print(f"locklab: {e.message}", file=sys.stderr)
    if kept:
        print(f"locklab: {kept}", file=sys.stderr)
    return e.status


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _main(argv)
    except DriverError as e:
        sys.stdout.flush()
        return _driver_error(e)
    except LocklabError as e:
        sys.stdout.flush()
        print(f"locklab: {e.message}", file=sys.stderr)
        return e.status
    except KeyboardInterrupt:
        print("locklab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
