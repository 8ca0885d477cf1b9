"""liblocklab-preload.so from the outside: its exported symbol versions, how unversioned references
bind, `locklab run` (exit statuses, bad input, the --stat profile with exact counts) and the shim
section of `locklab list`. Needs the real build (make build); skips without it."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from locklab import shim

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"
PRELOAD = Path(os.environ.get("LOCKLAB_PRELOAD") or BUILD / "liblocklab-preload.so")
LIBC = "/lib/x86_64-linux-gnu/libc.so.6" if os.path.exists("/lib/x86_64-linux-gnu/libc.so.6") \
    else "/lib/aarch64-linux-gnu/libc.so.6"

needs_shim = pytest.mark.skipif(not PRELOAD.exists(), reason="liblocklab-preload.so not built")
NAMES = re.compile(r"^(__)?pthread_(mutex_(init|destroy|lock|trylock|timedlock|clocklock|unlock|consistent|"
                   r"consistent_np)|cond_(init|destroy|wait|timedwait|clockwait|signal|broadcast))$")


def cli(*args, cwd=None):
    """locklab in a child process: (exit status, stdout, stderr) at the file-descriptor level,
    where the program run by `locklab run` writes too."""
    import sys
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    res = subprocess.run([sys.executable, "-m", "locklab.cli", *map(str, args)], capture_output=True,
                         text=True, cwd=cwd, env=env, timeout=300)
    return res.returncode, res.stdout, res.stderr


def one_line(err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


def exported(path):
    """{(name, version, is_default)} of the pthread mutex/cond functions a library defines."""
    out = subprocess.run(["objdump", "-T", path], capture_output=True, text=True, check=True).stdout
    res = set()
    for line in out.splitlines():
        if "*UND*" in line or " DF " not in line:
            continue
        parts = line.split()
        name, ver = parts[-1], parts[-2]
        if NAMES.match(name):
            hidden = ver.startswith("(")
            res.add((name, ver.strip("()"), not hidden))
    return res


@needs_shim
@pytest.mark.skipif(not shutil.which("objdump") or not os.path.exists(LIBC), reason="objdump/libc not found")
def test_every_glibc_symbol_version_is_exported():
    mine, glibc = exported(str(PRELOAD)), exported(LIBC)
    assert glibc, "no pthread symbols found in libc"
    assert mine == glibc, f"missing: {sorted(glibc - mine)}, extra: {sorted(mine - glibc)}"


@needs_shim
@pytest.mark.skipif(not shutil.which("gcc"), reason="no C compiler")
def test_unversioned_references_get_the_default_versions(tmp_path):
    """A program whose pthread_cond_* references carry no version (it was linked against a library
    with unversioned definitions, as a ThreadSanitizer build is) must get the new condvar ABI from
    the shim, not the old GLIBC_2.2.5 one: here it mixes timedwait (clock from the attribute) with
    clockwait on one condvar, which only works when both are the same ABI."""
    stub = tmp_path / "stub.c"
    stub.write_text("#include <pthread.h>\n"
                    "int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a) { return 99; }\n"
                    "int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)"
                    " { return 99; }\n"
                    "int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t k,"
                    " const struct timespec *t) { return 99; }\n"
                    "int pthread_cond_signal(pthread_cond_t *c) { return 99; }\n")
    prog = tmp_path / "prog.c"
    prog.write_text(r"""
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
static long long now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
int main(void) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER; pthread_cond_t c; pthread_condattr_t a;
    pthread_condattr_init(&a); pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    if (pthread_cond_init(&c, &a)) return 10;
    pthread_mutex_lock(&m);
    for (int i = 0; i < 3; i++) {
        long long t0 = now(CLOCK_MONOTONIC);
        struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); ts.tv_nsec += 20000000;
        if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
        int r;
        while ((r = (i & 1) ? pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &ts)
                            : pthread_cond_timedwait(&c, &m, &ts)) == 0) ;
        if (r != ETIMEDOUT) return 20 + i;
        if (now(CLOCK_MONOTONIC) - t0 < 20000000) return 30 + i;  /* the wrong clock times out at once */
        if (pthread_cond_signal(&c)) return 40;
    }
    pthread_mutex_unlock(&m);
    puts("ok");
    return 0;
}
""")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "libstub.so"), str(stub)], check=True)
    subprocess.run(["gcc", "-o", str(tmp_path / "prog"), str(prog), f"-L{tmp_path}", "-lstub", "-pthread",
                    f"-Wl,-rpath,{tmp_path}"], check=True)
    syms = subprocess.run(["objdump", "-T", str(tmp_path / "prog")], capture_output=True, text=True).stdout
    refs = [ln for ln in syms.splitlines() if "pthread_cond_init" in ln]
    assert refs and "GLIBC" not in refs[0], f"the reference should be unversioned: {refs}"
    env = shim.shim_env("lk_mutex", str(PRELOAD))
    res = subprocess.run([str(tmp_path / "prog")], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout == "ok\n", (res.returncode, res.stderr)


# ---- locklab run ----------------------------------------------------------------------------------

@needs_shim
def test_run_passes_the_exit_status_through(run_cli):
    assert run_cli("run", "--", "true")[0] == 0
    assert run_cli("run", "--", "sh", "-c", "exit 3")[0] == 3
    assert run_cli("run", "--lock", "glibc", "--", "sh", "-c", "exit 42")[0] == 42
    assert run_cli("run", "--", "sh", "-c", "kill -TERM $$")[0] == 128 + 15   # like a shell


@needs_shim
def test_run_sets_the_lock():
    rc, out, err = cli("run", "--lock", "futex3", "--", "sh", "-c", 'echo "lock=$LOCKLAB_LOCK"')
    assert rc == 0 and out == "lock=futex3\n", err


@needs_shim
@pytest.mark.parametrize("args,status,text", [
    ([], 2, "locklab: run: expected a command after --, got nothing"),
    (["--"], 2, "locklab: run: expected a command after --, got nothing"),
    (["--", "no-such-command-locklab"], 127, "locklab: run: no-such-command-locklab: command not found"),
    (["--", "/no/such/file"], 127, "locklab: run: /no/such/file: no such file"),
    (["--", "./plain.txt"], 126, "locklab: run: ./plain.txt: not an executable file"),
    (["--", "./garbage"], 126, "locklab: run: ./garbage: cannot execute it (Exec format error)"),
    (["--lock", "nosuch", "--", "true"], 2, "locklab: --lock: expected one of lk_mutex, glibc"),
    (["--lock", "spin_mcs", "--", "true"], 2, "locklab: --lock: 'spin_mcs' cannot be used by the shim"),
    (["--out", "x.json", "--", "true"], 2, "locklab: --out: only meaningful with --stat"),
    (["--stat", "--top", "0", "--", "true"], 2, "locklab: --top: expected an integer in [1, 100000], got '0'"),
])
def test_run_bad_input(run_cli, args, status, text, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain.txt").write_text("not a program\n")
    (tmp_path / "garbage").write_bytes(b"\x00\x01 not a program\n")
    (tmp_path / "garbage").chmod(0o755)
    rc, out, err = run_cli("run", *args)
    assert rc == status
    assert one_line(err).startswith(text)


@needs_shim
@pytest.mark.skipif(not shutil.which("gcc"), reason="no C compiler")
def test_run_refuses_a_statically_linked_program(run_cli, tmp_path):
    src = tmp_path / "s.c"
    src.write_text("int main(void) { return 0; }\n")
    res = subprocess.run(["gcc", "-static", "-o", str(tmp_path / "static"), str(src)], capture_output=True)
    if res.returncode:
        pytest.skip("no static libc to link with")
    rc, out, err = run_cli("run", "--", str(tmp_path / "static"))
    assert rc == 2
    assert "statically linked" in one_line(err)
    # a script whose interpreter is that program is refused too
    script = tmp_path / "script"
    script.write_text(f"#!{tmp_path / 'static'}\n")
    script.chmod(0o755)
    rc, out, err = run_cli("run", "--", str(script))
    assert rc == 2 and "statically linked" in one_line(err)


STAT_PROG = BUILD / "test_preload_stat"


@needs_shim
@pytest.mark.skipif(not STAT_PROG.exists(), reason="tests not built")
@pytest.mark.parametrize("lock", ["lk_mutex", "glibc"])
def test_run_stat_profile(tmp_path, lock):
    """The deterministic workload of tests/test_preload_stat.c under `locklab run --stat`: the
    written JSON has the exact counts, and the table names its most contended lock."""
    out = tmp_path / "profile.json"
    rc, cap_out, cap_err = cli("run", "--lock", lock, "--stat", "--out", out, "--", STAT_PROG, "work")
    assert rc == 0, cap_err
    sites = {m.group(1): int(m.group(2)) for m in re.finditer(r"^SITE (\w) (\d+)$", cap_out, re.M)}
    assert set(sites) == set("ABENDRC")
    doc = json.loads(out.read_text())
    assert doc["schema"] == "locklab-lockstat-run/1" and doc["exit_status"] == 0 and doc["lock"] == lock
    assert shim.load_format(out) == doc         # schema/lockstat-run.schema.json, lockstat.schema.json
    assert len(doc["processes"]) == 1
    p = doc["processes"][0]
    assert p["schema"] == "locklab-lockstat/1" and p["root"] and p["lock"] == lock
    assert p["objects_dropped"] == 0

    def obj(kind, letter):
        found = [x for x in p[kind] if x["site"]["line"] == sites[letter]
                 and x["site"]["file"].endswith("test_preload_stat.c")]
        assert len(found) == 1, (letter, [x["site"] for x in p[kind]])
        return found[0]

    a, b = obj("mutexes", "A"), obj("mutexes", "B")
    assert (a["acquisitions"], a["contended"], a["holds"], a["site"]["how"]) == (100, 0, 100, "first-use")
    assert (b["acquisitions"], b["contended"], b["inits"], b["site"]["how"]) == (52, 1, 1, "init")
    assert b["wait_ns_total"] > 0 and b["hold_ns_max"] >= 2_000_000
    assert b["hold_ns_p50"] <= b["hold_ns_p99"] <= b["hold_ns_max"]
    assert sum(c for _, _, c in b["hold_hist"]) == b["holds"]
    e = obj("mutexes", "E")
    assert (e["type"], e["misuse"]["unlock_unlocked"], e["misuse"]["relock"]) == ("errorcheck", 1, 1)
    assert obj("mutexes", "N")["misuse"]["unlock_unlocked"] == 1
    d = obj("mutexes", "D")
    assert (d["misuse"]["destroy_locked"], d["destroys"]) == (1, 1)
    r = obj("mutexes", "R")
    assert (r["type"], r["acquisitions"], r["recursive"]) == ("recursive", 1, 2)
    c = obj("condvars", "C")
    assert (c["signals"], c["broadcasts"], c["waits"], c["timeouts"]) == (3, 1, 2, 2)
    assert p["totals"]["misuse"] == {"unlock_unlocked": 2, "unlock_not_owner": 0, "destroy_locked": 1,
                                     "relock": 1, "use_after_destroy": 0}
    # the table: B (the only contended lock) ranks first, with its source line
    assert "most contended locks on " + lock in cap_err
    first = [ln for ln in cap_err.splitlines() if ln.strip().startswith("│ 1 ")]
    assert first and f"test_preload_stat.c:{sites['B']}" in first[0]


@needs_shim
def test_run_stat_without_locks(tmp_path):
    out = tmp_path / "p.json"
    rc, _, err = cli("run", "--stat", "--out", out, "--", "true")
    assert rc == 0
    doc = json.loads(out.read_text())
    assert doc["exit_status"] == 0
    # the root process always writes its profile, empty or not
    assert [p["totals"]["acquisitions"] for p in doc["processes"]] == [0]
    # dash leaves with _exit(): no exit handlers run, so no profile; the user is told
    rc, _, err = cli("run", "--stat", "--out", out, "--", "sh", "-c", "exit 0")
    assert rc == 0 and "no lock profile was written" in err
    assert json.loads(out.read_text())["processes"] == []


@needs_shim
def test_list_shows_the_shim_locks(fake_bench, run_cli):
    rc, out, err = run_cli("list")
    assert rc == 0
    assert "LD_PRELOAD shim locks" in out
    for name in ("lk_mutex", "glibc", "futex3", "spin_ttas", "qspinlock"):
        assert name in out
    rc, out, err = run_cli("list", "--json")
    doc = json.loads(out)
    names = {x["name"]: x for x in doc["shim"]["locks"]}
    assert names["lk_mutex"]["supported"] and names["glibc"]["supported"]
    assert not names["spin_mcs"]["supported"] and "per-thread" in names["spin_mcs"]["why"]


def test_elf_interp_of_this_python():
    import sys
    is_elf, interp = shim.elf_interp(os.path.realpath(sys.executable))
    assert is_elf and interp and "ld-linux" in interp
    assert shim.elf_interp(__file__) == (False, None)


# ---------------------------------------------------------------------------------------------
# the shim's output formats and their JSON Schemas (python/locklab/schema/)

@needs_shim
def test_shim_lock_list_validates():
    """The shim's own LOCKLAB_SHIM_LIST document satisfies schema/shim-locks.schema.json (shim_locks()
    checks it on every read), and a lock without `why` or `state` is caught."""
    doc = shim.shim_locks(str(PRELOAD))
    assert shim.check_format(doc) is None
    bad = json.loads(json.dumps(doc))
    bad["locks"][0].pop("state")
    assert shim.check_format(bad) == '"locks[0].state" is missing'


def test_every_format_has_a_schema_that_is_itself_valid():
    import jsonschema
    for name, f in shim.FORMATS.items():
        s = json.loads((shim.SCHEMA_DIR / f).read_text())
        jsonschema.Draft202012Validator.check_schema(s)
        assert s["properties"]["schema"] == {"const": name}, f


def _profile(tmp_path):
    """A real profile of a small threaded program (two mutexes, a condvar)."""
    path = tmp_path / "p.json"
    env = shim.shim_env("lk_mutex", str(PRELOAD), stat_file=str(path))
    subprocess.run([str(STAT_PROG), "work"], env=env, check=True, capture_output=True)
    return path


@needs_shim
def test_profiles_are_validated_on_read(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    good = json.loads(_profile(tmp_path).read_text())
    (d / "1.json").write_text(json.dumps(good))
    (d / "junk.txt").write_text("not json")             # not a profile: skipped
    assert shim.load_profiles(d) == [good]
    bad = json.loads(json.dumps(good))
    bad["mutexes"][0]["hold_hist"] = [[16, 20]]
    (d / "2.json").write_text(json.dumps(bad))
    with pytest.raises(shim.FileError) as e:
        shim.load_profiles(d)
    assert str(e.value) == (f"{d / '2.json'}: malformed locklab-lockstat/1 profile: "
                            "at mutexes[0].hold_hist[0]: expected at least 3 items, got 2")


@pytest.mark.parametrize("doc,problem", [
    ({"schema": "locklab-nosuch/1"}, "no JSON Schema for format \"locklab-nosuch/1\""),
    ([1, 2], "top level is not a JSON object"),
    ({"schema": "locklab-lockstat-run/1", "command": ["x"], "lock": "lk_mutex", "exit_status": 300,
      "created": "now", "processes": []},
     "malformed locklab-lockstat-run/1 document: at exit_status: expected a number <= 255, got 300"),
    ({"schema": "locklab-conformance/1", "glibc": "2.36", "modes": ["lk_mutex"], "machine": {},
      "counts": {}, "regressions": [], "tests": []},
     "malformed locklab-conformance/1 document: at modes[0]: expected \"native\", got \"lk_mutex\""),
])
def test_load_format_bad_documents(tmp_path, doc, problem):
    f = tmp_path / "x.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(shim.FileError) as e:
        shim.load_format(f)
    assert str(e.value).startswith(f"{f}: {problem}"), str(e.value)
