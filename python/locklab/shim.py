"""The LD_PRELOAD shim from Python: finding it, checking that a program can be interposed, the
environment that runs a program on a lock, and the lock profile (LOCKLAB_STAT) it writes.

    find_preload()          liblocklab-preload.so: $LOCKLAB_PRELOAD, <repo>/build/, next to locklab-bench
    find_exec()             locklab-exec (times one command; the front end never times anything itself)
    shim_locks(preload)     the locks the shim supports, asked from the shim (LOCKLAB_SHIM_LIST=1)
    resolve_command(argv)   the executable a shell would run, or UsageError/NotFound (exit 127)
    check_interposable(p)   UsageError for what LD_PRELOAD cannot reach: statically linked, setuid
    shim_env(...)           the environment for one run (LD_PRELOAD, LOCKLAB_LOCK, LOCKLAB_STAT...)
    load_profiles(dir)      every process's profile that a run left in a directory
    top_locks(profiles, n)  the most contended mutexes, ranked by total wait
    profile_table(...)      those as a rich table
    check_format(doc)       a shim/apps/conformance document against its JSON Schema (schema/)
    load_format(path)       read one such file and validate it, FileError in words

`locklab run` (cmd_run) is built from these, and `locklab apps` / `locklab advise` reuse them.
The profile's JSON schema (locklab-lockstat/1) is documented in docs/shim.md.
"""

import argparse
import datetime as _dt
import glob
import json
import os
import shutil
import stat
import struct
import subprocess
import tempfile
from pathlib import Path

from functools import lru_cache

from .errors import FileError, LocklabError, UsageError
from . import results

REPO = Path(__file__).resolve().parents[2]
SCHEMA_LOCKS = "locklab-shim-locks/1"
SCHEMA_STAT = "locklab-lockstat/1"
SCHEMA_RUN = "locklab-lockstat-run/1"

# Every JSON format the shim and its tools write, and its JSON Schema (Draft 2020-12) in schema/
# next to this module, like results.schema.json: the shim's lock list and profile, `locklab run
# --stat`, `locklab apps` (and the identity file kept from one), tests/glibc/conformance.py --json.
SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
FORMATS = {
    SCHEMA_LOCKS: "shim-locks.schema.json",
    SCHEMA_STAT: "lockstat.schema.json",
    SCHEMA_RUN: "lockstat-run.schema.json",
    "locklab-apps/1": "apps.schema.json",
    "locklab-apps-identity/1": "apps-identity.schema.json",
    "locklab-conformance/1": "conformance.schema.json",
}


class CommandNotFound(LocklabError):
    """The command does not exist: exit 127, as a shell says it."""

    status = 127


class NotExecutable(LocklabError):
    """The command exists but cannot be executed: exit 126, as a shell says it."""

    status = 126


def _installed_sibling(name, subdirs):
    """name next to an installed locklab-bench: <prefix>/bin -> <prefix>/<subdir>/name."""
    bench = shutil.which("locklab-bench")
    if not bench:
        return None
    prefix = Path(bench).resolve().parent.parent
    for sub in subdirs:
        for p in glob.glob(str(prefix / sub / name)):
            return p
    return None


def find_preload():
    """Path of liblocklab-preload.so, or UsageError (exit 2) saying how to get it."""
    env = os.environ.get("LOCKLAB_PRELOAD")
    if env:
        if Path(env).is_file():
            return str(Path(env).resolve())
        raise UsageError(f"LOCKLAB_PRELOAD={env}: no such file (run `make build`, or unset it)")
    p = REPO / "build" / "liblocklab-preload.so"
    if p.is_file():
        return str(p)
    inst = _installed_sibling("liblocklab-preload.so", ["lib", "lib64", "lib/*"])
    if inst:
        return inst
    raise UsageError(f"cannot find liblocklab-preload.so (looked at $LOCKLAB_PRELOAD, {p}, next to "
                     "an installed locklab-bench): run `make build` first")


def find_exec():
    """Path of locklab-exec, or UsageError."""
    from .driver import find_built
    return find_built("locklab-exec", "LOCKLAB_EXEC")


_LOCKS_CACHE = {}


def shim_locks(preload=None):
    """The shim's lock list document: {"schema", "default", "locks": [{name, supported, ...}]}."""
    preload = preload or find_preload()
    if preload in _LOCKS_CACHE:
        return _LOCKS_CACHE[preload]
    true = shutil.which("true") or "/bin/true"
    env = clean_env()
    env.update({"LD_PRELOAD": preload, "LOCKLAB_SHIM_LIST": "1"})
    res = subprocess.run([true], env=env, capture_output=True, text=True)
    try:
        doc = json.loads(res.stdout)
    except ValueError:
        raise LocklabError(f"{preload}: LOCKLAB_SHIM_LIST=1 did not print the lock list "
                           f"(exit {res.returncode}: {res.stderr.strip()[:300]})")
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA_LOCKS:
        raise LocklabError(f"{preload}: lock list has schema "
                           f"{doc.get('schema') if isinstance(doc, dict) else None!r}, expected {SCHEMA_LOCKS}")
    problem = check_format(doc, SCHEMA_LOCKS)
    if problem:
        raise LocklabError(f"{preload}: malformed lock list ({SCHEMA_LOCKS}): {problem}")
    _LOCKS_CACHE[preload] = doc
    return doc


def supported_locks(preload=None):
    return [x["name"] for x in shim_locks(preload)["locks"] if x.get("supported")]


def spinning_locks(preload=None):
    return {x["name"] for x in shim_locks(preload)["locks"] if x.get("supported") and x.get("spins")}


def check_lock(name, preload=None, allow_none=False, opt="--lock"):
    """UsageError unless the shim supports `name` ("none": no shim at all, when allowed); the
    message names the option `opt`."""
    if allow_none and name == "none":
        return name
    doc = shim_locks(preload)
    names = [x["name"] for x in doc["locks"] if x.get("supported")]
    for x in doc["locks"]:
        if x["name"] == name:
            if x.get("supported"):
                return name
            raise UsageError(f"{opt}: '{name}' cannot be used by the shim: {x.get('why')} "
                             f"(expected one of {', '.join(names)})")
    extra = ", none" if allow_none else ""
    raise UsageError(f"{opt}: expected one of {', '.join(names)}{extra}, got '{name}'")


# ------------------------------------------------------------------------------------------------
# the command

def resolve_command(argv, what="run"):
    """The file a shell would execute for argv[0]: CommandNotFound (127) / NotExecutable (126);
    messages start with `what` (the subcommand)."""
    if not argv:
        raise UsageError(f"{what}: expected a command after --, got nothing")
    name = argv[0]
    if "/" in name:
        p = Path(name)
        if not p.exists():
            raise CommandNotFound(f"{what}: {name}: no such file")
        if p.is_dir() or not os.access(p, os.X_OK):
            raise NotExecutable(f"{what}: {name}: not an executable file")
        return str(p)
    w = shutil.which(name)
    if not w:
        raise CommandNotFound(f"{what}: {name}: command not found")
    return w


def elf_interp(path):
    """(is_elf, PT_INTERP path or None) from the ELF header and program headers."""
    with open(path, "rb") as f:
        head = f.read(64)
        if len(head) < 52 or head[:4] != b"\x7fELF":
            return False, None
        cls, data = head[4], head[5]
        end = "<" if data == 1 else ">"
        if cls == 2:
            phoff, = struct.unpack_from(end + "Q", head, 32)
            phentsize, phnum = struct.unpack_from(end + "HH", head, 54)
        else:
            phoff, = struct.unpack_from(end + "I", head, 28)
            phentsize, phnum = struct.unpack_from(end + "HH", head, 42)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ph = f.read(phentsize)
            p_type, = struct.unpack_from(end + "I", ph, 0)
            if p_type == 3:  # PT_INTERP
                if cls == 2:
                    off, = struct.unpack_from(end + "Q", ph, 8)
                    size, = struct.unpack_from(end + "Q", ph, 32)
                else:
                    off, = struct.unpack_from(end + "I", ph, 4)
                    size, = struct.unpack_from(end + "I", ph, 16)
                f.seek(off)
                return True, f.read(size).rstrip(b"\0").decode(errors="replace")
        return True, None


def check_interposable(path, _depth=0, what="run"):
    """UsageError when LD_PRELOAD cannot reach the program (the shim would silently measure glibc);
    messages start with `what` (the subcommand)."""
    st = os.stat(path)
    if st.st_mode & (stat.S_ISUID | stat.S_ISGID) and os.geteuid() != st.st_uid:
        raise UsageError(f"{what}: {path} is setuid/setgid: the dynamic linker ignores LD_PRELOAD for it, "
                         "so it would run on glibc's locks, not the shim's")
    try:
        is_elf, interp = elf_interp(path)
    except OSError as e:
        raise NotExecutable(f"{what}: {path}: cannot read it ({e.strerror})")
    if is_elf:
        if interp is None:
            raise UsageError(f"{what}: {path} is statically linked (no ELF interpreter): LD_PRELOAD "
                             "cannot replace its pthread functions, so locklab cannot run it on "
                             "another lock or profile it")
        return
    with open(path, "rb") as f:
        first = f.readline(512)
    if first.startswith(b"#!") and _depth < 4:
        words = first[2:].decode(errors="replace").split()
        if words:
            interp = words[0] if "/" in words[0] else shutil.which(words[0]) or words[0]
            if interp.endswith("/env") and len(words) > 1:
                interp = shutil.which(words[1]) or words[1]
            if os.path.exists(interp):
                check_interposable(interp, _depth + 1, what)


def clean_env(base=None):
    """os.environ without the shim's variables (a clean slate for one run)."""
    env = dict(os.environ if base is None else base)
    for k in list(env):
        if k.startswith("LOCKLAB_") and k not in ("LOCKLAB_BENCH", "LOCKLAB_PRELOAD", "LOCKLAB_EXEC"):
            del env[k]
    pre = [p for p in env.get("LD_PRELOAD", "").replace(":", " ").split()
           if not p.endswith("liblocklab-preload.so")]
    if pre:
        env["LD_PRELOAD"] = " ".join(pre)
    else:
        env.pop("LD_PRELOAD", None)
    return env


def shim_env(lock, preload=None, stat_file=None, base=None):
    """Environment for a run on `lock` ("none": no shim); stat_file turns the profile on."""
    env = clean_env(base)
    if lock == "none":
        return env
    preload = preload or find_preload()
    pre = env.get("LD_PRELOAD")
    env["LD_PRELOAD"] = f"{pre} {preload}" if pre else preload
    env["LOCKLAB_LOCK"] = lock
    if stat_file:
        env["LOCKLAB_STAT"] = "1"
        env["LOCKLAB_STAT_FILE"] = str(stat_file)
    return env


# ------------------------------------------------------------------------------------------------
# profiles

@lru_cache(maxsize=None)
def _format_validator(name):
    """The Draft 2020-12 validator of format `name`; the schemas may refer to each other by $id."""
    import jsonschema
    from referencing import Registry, Resource

    docs = {n: json.loads((SCHEMA_DIR / f).read_text(encoding="utf-8")) for n, f in FORMATS.items()}
    reg = Registry().with_resources((d["$id"], Resource.from_contents(d)) for d in docs.values())
    return jsonschema.Draft202012Validator(docs[name], registry=reg)


def check_format(doc, name=None):
    """None when `doc` is a valid document of format `name` (default: the one its "schema" field
    names), else the problem in words (the most specific violation, as results.check())."""
    from .results import summarize_errors
    if not isinstance(doc, dict):
        return "top level is not a JSON object"
    name = name or doc.get("schema")
    if name not in FORMATS:
        return f"no JSON Schema for format {json.dumps(name)[:80]} (known: {', '.join(sorted(FORMATS))})"
    if doc.get("schema") != name:
        return f"schema is {json.dumps(doc.get('schema'))[:80]}, expected \"{name}\""
    return summarize_errors(list(_format_validator(name).iter_errors(doc)))


def load_format(path, name=None):
    """Parse one file of format `name` (default: the one it names) and validate it; FileError
    "PATH: problem" on anything wrong."""
    from .results import parse
    doc = parse(path, what="a locklab JSON document")
    problem = check_format(doc, name)
    if problem:
        want = name or doc.get("schema") if isinstance(doc, dict) else None
        if want in FORMATS and doc.get("schema") == want:
            problem = f"malformed {want} document: {problem}"
        raise FileError(path, problem)
    return doc


def load_profiles(directory):
    """Every locklab-lockstat/1 document in directory, validated: the root process first, then by
    pid. A file that is not JSON is not a profile (skipped); a profile that breaks the schema is the
    shim's bug and a FileError."""
    out = []
    for p in sorted(Path(directory).iterdir()):
        if ".tmp" in p.name or not p.is_file():
            continue
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("schema") == SCHEMA_STAT:
            problem = check_format(doc, SCHEMA_STAT)
            if problem:
                raise FileError(p, f"malformed {SCHEMA_STAT} profile: {problem}")
            out.append(doc)
    out.sort(key=lambda d: (not d.get("root"), d.get("pid", 0)))
    return out


def site_text(site):
    """'function (file:line)', 'symbol+0xoff (object)' or the address: where the lock came from."""
    if not site:
        return "?"
    fn, file, line = site.get("function"), site.get("file"), site.get("line")
    if file and line:
        loc = f"{os.path.basename(file)}:{line}"
        return f"{fn} ({loc})" if fn else loc
    obj = os.path.basename(site.get("object") or "") or "?"
    if site.get("symbol"):
        return f"{site['symbol']}+{site.get('offset', 0):#x} ({obj})"
    if fn:
        return f"{fn} ({obj})"
    return f"{site.get('addr') or '?'} ({obj})"


def top_locks(profiles, n=10):
    """The n mutexes with the most total wait (then contended, then acquisitions), across processes.

    Each row: {rank, pid, command, site, site_text, acquisitions, contended, contended_pct,
    wait_ns_total, wait_ns_max, hold_ns_p99, type, impl, misuse}.
    """
    rows = []
    for d in profiles:
        cmd = os.path.basename((d.get("argv") or [d.get("exe") or "?"])[0])
        for m in d.get("mutexes", []):
            acq = m.get("acquisitions", 0)
            rows.append({
                "pid": d.get("pid"), "command": cmd, "site": m.get("site"),
                "site_text": site_text(m.get("site")), "type": m.get("type"), "impl": m.get("impl"),
                "acquisitions": acq, "contended": m.get("contended", 0),
                "contended_pct": 100.0 * m.get("contended", 0) / acq if acq else 0.0,
                "wait_ns_total": m.get("wait_ns_total", 0), "wait_ns_max": m.get("wait_ns_max", 0),
                "hold_ns_p99": m.get("hold_ns_p99", 0),
                "misuse": {k: v for k, v in (m.get("misuse") or {}).items() if v},
            })
    rows.sort(key=lambda r: (-r["wait_ns_total"], -r["contended"], -r["acquisitions"]))
    for i, r in enumerate(rows[:n]):
        r["rank"] = i + 1
    return rows[:n]


def fmt_ns(ns):
    if ns is None:
        return "-"
    ns = float(ns)
    for div, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if ns >= div:
            return f"{ns / div:.3g} {unit}"
    return f"{ns:.0f} ns"


def profile_table(rows, title, show_process=False):
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=escape(title), title_justify="left")
    cols = ["#", "call site"] + (["process"] if show_process else []) + \
           ["acquisitions", "contended", "total wait", "max wait", "hold p99"]
    for c in cols:
        t.add_column(c, justify="right" if c not in ("call site", "process") else "left")
    for r in rows:
        cells = [str(r["rank"]), escape(r["site_text"])]
        if show_process:
            cells.append(escape(f"{r['command']} [{r['pid']}]"))
        cells += [f"{r['acquisitions']:,}", f"{r['contended_pct']:.1f} %", fmt_ns(r["wait_ns_total"]),
                  fmt_ns(r["wait_ns_max"]), fmt_ns(r["hold_ns_p99"])]
        t.add_row(*cells)
    return t


def summary_lines(profiles):
    """One line per process: locks seen, acquisitions, wait share of the run time, misuse."""
    out = []
    for d in profiles:
        tot = d.get("totals", {})
        el = d.get("elapsed_ns") or 0
        share = 100.0 * tot.get("wait_ns", 0) / el if el else 0.0
        mis = {k: v for k, v in (tot.get("misuse") or {}).items() if v}
        cmd = os.path.basename((d.get("argv") or ["?"])[0])
        line = (f"{cmd} [{d.get('pid')}] on {d.get('lock')}: {tot.get('mutexes', 0)} mutexes, "
                f"{tot.get('condvars', 0)} condvars, {tot.get('acquisitions', 0):,} acquisitions, "
                f"{tot.get('contended', 0):,} contended; total wait {fmt_ns(tot.get('wait_ns', 0))} "
                f"({share:.2f} % of {fmt_ns(el)} run time, summed over threads)")
        if mis:
            line += "; misuse: " + ", ".join(f"{k} {v}" for k, v in sorted(mis.items()))
        if d.get("objects_dropped"):
            line += f"; {d['objects_dropped']} objects not tracked (table full)"
        out.append(line)
    return out


# ------------------------------------------------------------------------------------------------
# locklab run

def add_run_arguments(p):
    p.add_argument("--lock", default="lk_mutex",
                   help="the lock to run the program on (default lk_mutex; `glibc` = glibc's own, "
                   "through the shim; `locklab list` shows them all)")
    p.add_argument("--stat", action="store_true",
                   help="record the lock profile: print the most contended locks and write the JSON")
    p.add_argument("--out", metavar="FILE",
                   help="where --stat writes the profile (default results/lockstat-<time>.json)")
    p.add_argument("--top", default="10", metavar="N", help="rows of the --stat table (default 10)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                   help="the program and its arguments, after --")


def exit_status(returncode):
    """A subprocess return code as a shell reports it: 128+N for a death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def _default_out():
    ts = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return os.path.join("results", f"lockstat-{ts}.json")


def run_command(argv, lock, stat=False, out=None, top=10, console=None):
    """`locklab run`: the program's exit status (127/126 for a missing/unrunnable command)."""
    from .runner import parse_positive_int
    top = parse_positive_int(top, "--top", lo=1, hi=100000)
    preload = find_preload()
    check_lock(lock, preload)
    exe = resolve_command(argv)
    check_interposable(exe)
    if out is not None and (not out or os.path.isdir(out)):
        raise UsageError(f"--out: expected a file name, got '{out}'")
    if out is not None and not stat:
        raise UsageError("--out: only meaningful with --stat (it names the profile file)")
    tmp = tempfile.mkdtemp(prefix="locklab-run-") if stat else None
    env = shim_env(lock, preload, stat_file=os.path.join(tmp, "stat.json") if tmp else None)
    try:
        try:
            proc = subprocess.run(argv, env=env)
        except FileNotFoundError:
            raise CommandNotFound(f"run: {argv[0]}: command not found")
        except PermissionError:
            raise NotExecutable(f"run: {argv[0]}: permission denied")
        except OSError as e:
            raise NotExecutable(f"run: {argv[0]}: cannot execute it ({e.strerror})")
        except KeyboardInterrupt:
            return 130
        status = exit_status(proc.returncode)
        if stat:
            report_profiles(tmp, argv, lock, status, out or _default_out(), top, console)
        return status
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def report_profiles(directory, argv, lock, status, out, top, console=None):
    """Print the --stat table and summary on stderr and write the run's JSON to `out`."""
    from .tables import console as make_console
    con = console or make_console(stderr=True)
    profiles = load_profiles(directory)
    doc = {"schema": SCHEMA_RUN, "command": list(argv), "lock": lock, "exit_status": status,
           "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "processes": profiles}
    results.write_json_atomic(doc, out)
    problem = check_format(doc, SCHEMA_RUN)  # after writing: the profiles are kept either way
    if problem:
        raise LocklabError(f"run --stat: {out} breaks its schema ({SCHEMA_RUN}): {problem}")
    if not profiles:
        con.print(f"locklab: no lock profile was written (the program used no pthread mutex or "
                  f"condvar, or exited without running its exit handlers); wrote {out}")
        return doc
    rows = top_locks(profiles, top)
    if rows:
        con.print(profile_table(rows, f"most contended locks on {lock} (of {sum(len(p.get('mutexes', [])) for p in profiles)} "
                                      "mutexes; wait and hold summed over threads)",
                                show_process=len(profiles) > 1))
    for line in summary_lines(profiles):
        con.print(line, soft_wrap=True, markup=False)
    con.print(f"wrote {out}", markup=False)
    return doc


def cmd_run(ns):
    argv = list(ns.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    return run_command(argv, ns.lock, stat=ns.stat, out=ns.out, top=ns.top)


def list_table(doc):
    """`locklab list`: the locks the shim supports (and the registry locks it cannot use, and why)."""
    from rich.markup import escape
    from rich.table import Table

    t = Table(title="LD_PRELOAD shim locks (LOCKLAB_LOCK / locklab run --lock; from the shim itself)",
              title_justify="left")
    for col in ("name", "usable", "state", "description"):
        t.add_column(col)
    for x in doc.get("locks", []):
        if x.get("supported"):
            state = {"inline": "in the mutex", "out-of-line": "pointed to", "glibc": "glibc's"}.get(
                x.get("state"), x.get("state") or "")
            if x.get("spins"):
                state += ", spins"
            t.add_row(escape(x["name"]), "yes", escape(state), escape(x.get("desc") or ""))
        else:
            t.add_row(escape(x["name"]), "no", "", escape(f"{x.get('desc') or ''} [{x.get('why')}]"))
    return t


def print_list(con):
    """The shim section of `locklab list` (one line instead when the shim is not built)."""
    try:
        doc = shim_locks()
    except UsageError as e:
        con.print(f"LD_PRELOAD shim: not available ({e.message})", markup=False)
        return None
    con.print(list_table(doc))
    return doc
