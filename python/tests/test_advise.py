"""`locklab advise` end to end on the programs that ship with the tests (tests/advise/*.c, built into
build/tests/advise/), its bad input, and the parts of its decision that can be checked exactly: the
plan from the budget, the ranking and the recommendation's sentence on constructed samples.

No test here judges a lock's speed: the machine is shared and noisy. What is asserted is what the
advice must be whatever the timings: which runs happened, the structure of the file (validated
against schema/advise.schema.json after every test), that the sentence has one of the allowed forms,
that a program without contention is told locks do not matter, and that every way a run can go
wrong stops the advice and names the lock. Needs the real build (make build); skips without it."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from locklab import advise, shim, stats, trials

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"
PROGS = BUILD / "tests" / "advise"
CONTENDED = PROGS / "locklab-advise-contended"
QUIET = PROGS / "locklab-advise-quiet"
LOCKSTATE = PROGS / "locklab-advise-lockstate"

needs_build = pytest.mark.skipif(
    not (BUILD / "liblocklab-preload.so").exists() or not (BUILD / "locklab-exec").exists()
    or not CONTENDED.exists(), reason="shim / locklab-exec / tests/advise programs not built")

# Contention that cannot fail to happen: 4 threads released together by a barrier, each holding the
# mutex for 200 us (asleep) 20 times, so whoever arrives while it is held waits.
CONTENDED_ARGS = [str(CONTENDED), "--threads", "4", "--iters", "20", "--hold-us", "200"]


@pytest.fixture(autouse=True)
def written_files_match_their_schemas(monkeypatch):
    """After each test: every advise.json advise wrote satisfies schema/advise.schema.json, and every
    profile file is a locklab-lockstat-run/1 document (as conftest.py does for results files)."""
    written = []
    real = advise._dump

    def dump(doc, path):
        real(doc, path)
        written.append(str(path))

    monkeypatch.setattr(advise, "_dump", dump)
    yield
    for path in written:
        if path.endswith("advise.json"):
            advise.load(path)
        else:
            doc = json.loads(Path(path).read_text())
            assert doc["schema"] == shim.SCHEMA_RUN, path
            assert all(p["schema"] == shim.SCHEMA_STAT for p in doc["processes"]), path


def lines(text):
    return [ln for ln in text.splitlines() if ln.strip()]


def one_line(err):
    ls = lines(err)
    assert len(ls) == 1, err
    return ls[0]


def sentence_ok(s):
    return any(re.fullmatch(f, s) for f in advise.SENTENCE_FORMS)


def load(out):
    return advise.load(out / "advise.json")


def runs_per_lock(doc):
    out = {}
    for t in doc["runs"]:
        out[t["variant"]] = out.get(t["variant"], 0) + 1
    return out


# ------------------------------------------------------------------------------------------------
# end to end

@needs_build
def test_contended_program_end_to_end(run_cli, tmp_path):
    out = tmp_path / "adv"
    locks = ["glibc", "lk_mutex", "futex3"]
    rc, stdout, err = run_cli("advise", "--locks", ",".join(locks[1:]), "--repeat", "4",
                              "--check-output", "--no-progress", "--out", out, "--", *CONTENDED_ARGS)
    assert rc == 0, err
    doc = load(out)
    assert doc["locks"] == locks and doc["baseline"] == "glibc"
    assert doc["program"] == CONTENDED_ARGS and doc["command"].startswith("locklab advise ")
    # the profile: contention is certain (see CONTENDED_ARGS), and its hottest lock is the one
    c = doc["contention"]
    assert c["verdict"] == "matters" and c["wait_share"] >= advise.WAIT_SHARE
    assert c["hottest"]["acquisitions"] == 80 and "contended.c:" in c["hottest"]["site_text"]
    assert doc["profiles"]["glibc"]["top"][0]["acquisitions"] == 80
    assert (out / "profile-glibc.json").exists()
    # every lock ran exactly R times, each once per repeat (repeats outermost), all successfully
    assert doc["plan"]["repeat"] == 4 and doc["plan"]["repeat_given"]
    assert runs_per_lock(doc) == {lk: 4 for lk in locks}
    for r in range(4):
        assert sorted(t["variant"] for t in doc["runs"][3 * r:3 * r + 3]) == sorted(locks)
    # ... in the seeded shuffled order (--seed 0), which is not the same in every repeat
    order = [(t["repeat"], t["variant"]) for t in doc["runs"]]
    assert order == trials.schedule(locks, 4, 0)
    assert len({tuple(v for r, v in order if r == k) for k in range(4)}) > 1
    assert all(t["ok"] and t["cpu_s"] >= 0 and t["wall_s"] > 0 for t in doc["runs"])
    # statistics, ranking and the sentence
    for lk in locks:
        s = doc["stats"][lk]
        assert s["n"] == 4 and s["failed"] == 0 and s["min"] <= s["median"] <= s["max"]
        assert "cpu_s_median" in s
    assert sorted(c["variant"] for c in doc["comparisons"]) == ["futex3", "lk_mutex"]
    assert [r["rank"] for r in doc["ranking"]] == [1, 2, 3]
    assert sorted(r["lock"] for r in doc["ranking"]) == sorted(locks)
    g = next(r for r in doc["ranking"] if r["lock"] == "glibc")
    assert g["verdict"] == "baseline" and g["speedup"] == 1.0
    speedups = [r["speedup"] for r in doc["ranking"]]
    assert speedups == sorted(speedups, reverse=True)
    rec = doc["recommendation"]
    assert sentence_ok(rec["sentence"]), rec["sentence"]
    assert doc["outcome"] == ("recommend" if rec["lock"] else "keep-glibc")
    # the best-ranked lock was profiled too
    best = next(r["lock"] for r in doc["ranking"] if r["lock"] != "glibc")
    assert set(doc["profiles"]) == {"glibc", best} and (out / f"profile-{best}.json").exists()
    # --check-output: every run's stdout was the glibc run's
    ident = doc["identity"]
    assert ident["identical"] and ident["checked_runs"] == 12 and len(ident["reference"]) == 64
    # what the user sees
    assert "glibc: most contended locks" in stdout and f"{best}: most contended locks" in stdout
    assert "vs glibc" in stdout and f"recommendation: {rec['sentence']}" in stdout
    assert "output: identical to glibc's in all 12 runs" in stdout
    assert "plan: 4 repeats x 3 locks = 12 runs" in err


@needs_build
def test_program_without_contention_is_told_locks_do_not_matter(run_cli, tmp_path):
    out = tmp_path / "adv"
    rc, stdout, err = run_cli("advise", "--no-progress", "--out", out, "--", QUIET, "--iters", "1000")
    assert rc == 0, err
    doc = load(out)
    assert doc["outcome"] == "locks-do-not-matter" and doc["runs"] == [] and doc["plan"] is None
    c = doc["contention"]
    assert c["verdict"] == "does-not-matter" and c["wait_ns"] == 0 and c["contended"] == 0
    assert c["acquisitions"] == 1000 and c["mutexes"] == 1
    s = doc["recommendation"]["sentence"]
    assert sentence_ok(s) and s.startswith("locks do not matter for this program: ")
    # the hottest lock is named anyway: main's mutex, created in quiet.c
    assert re.search(r"the hottest, main \(quiet\.c:\d+\), had 0 of 1,000 acquisitions contended", s)
    assert s in stdout and "--force measures every lock anyway" in err
    assert (out / "profile-glibc.json").exists()


@needs_build
def test_force_measures_every_lock_anyway(run_cli, tmp_path):
    """--force on the quiet program: every lock R times. With 3 runs per side Mann-Whitney cannot
    reach p < 0.05, so the verdicts are all "tied" whatever the timings: the sentence is known."""
    out = tmp_path / "adv"
    rc, stdout, err = run_cli("advise", "--force", "--locks", "glibc,lk_mutex", "--repeat", "3",
                              "--no-progress", "--out", out, "--", QUIET, "--iters", "1000")
    assert rc == 0, err
    doc = load(out)
    assert doc["contention"]["verdict"] == "does-not-matter"
    assert runs_per_lock(doc) == {"glibc": 3, "lk_mutex": 3}
    assert doc["outcome"] == "keep-glibc"
    assert doc["recommendation"]["sentence"] == "no lock is better than glibc here (all tied)"
    assert "Mann-Whitney needs 4 runs per side" in err


@needs_build
def test_app_end_to_end(run_cli, tmp_path):
    """advise --app: one of `locklab apps`'s programs, with its metric and its output check."""
    out = tmp_path / "adv"
    rc, stdout, err = run_cli("advise", "--app", "cxx-queue", "--quick", "--force", "--locks",
                              "glibc,lk_mutex", "--repeat", "3", "--no-progress", "--out", out)
    assert rc == 0, err
    doc = load(out)
    assert doc["app"] == "cxx-queue" and doc["metric"]["kind"] == "app"
    assert doc["check_output"] == "stdout" and doc["identity"]["identical"]
    assert runs_per_lock(doc) == {"glibc": 3, "lk_mutex": 3}
    assert doc["recommendation"]["sentence"] == "no lock is better than glibc here (all tied)"
    # the C++ queue's std::mutex is seen by the profile, at a line of cxx-queue.cc
    assert any("cxx-queue.cc" in r["site_text"] for r in doc["profiles"]["glibc"]["top"])


# ------------------------------------------------------------------------------------------------
# a run that goes wrong stops the advice and names the lock

@needs_build
@pytest.mark.parametrize("to_file", [False, True], ids=["stdout", "file"])
def test_check_output_stops_and_names_the_lock(run_cli, tmp_path, monkeypatch, to_file):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "adv"
    check = ["--check-output", "state.txt"] if to_file else ["--check-output"]
    prog = [LOCKSTATE] + (["--out", "state.txt"] if to_file else [])
    rc, stdout, err = run_cli("advise", "--force", *check, "--locks", "glibc,futex3", "--repeat", "3",
                              "--no-progress", "--out", out, "--", *prog)
    assert rc == 1
    first = lines(err)[-2]
    what = "file state.txt" if to_file else "stdout"
    assert first.startswith(f"locklab: advise: --check-output: the {what} of locklab-advise-lockstate "
                            "on futex3 (repeat 1 of 3) differs from glibc's: first difference at "
                            "line 1: glibc "), err
    assert "__nusers=1" in first and "__nusers=0" in first
    assert lines(err)[-1] == f"(wrote {out / 'advise.json'})"
    doc = load(out)
    assert doc["outcome"] == "stopped" and doc["stopped"]["lock"] == "futex3"
    assert doc["stopped"]["repeat"] == 1 and doc["recommendation"] is None
    # both outputs are kept for a diff
    assert "__nusers=1" in (out / "output-glibc").read_text()
    assert "__nusers=0" in (out / "output-futex3-r1").read_text()
    assert not (tmp_path / "state.txt").exists()   # each run's file is removed once compared


@needs_build
def test_output_that_differs_between_glibc_runs_is_not_deterministic(run_cli, tmp_path):
    locks = ["glibc", "lk_mutex"]
    seed = next(s for s in range(100) if trials.schedule(locks, 3, s)[0][1] == "glibc")
    out = tmp_path / "adv"
    rc, stdout, err = run_cli("advise", "--check-output", "--locks", "lk_mutex", "--repeat", "3",
                              "--seed", seed, "--no-progress", "--out", out, "--",
                              "sh", "-c", "cat /proc/sys/kernel/random/uuid")
    assert rc == 1
    assert lines(err)[-2].startswith("locklab: advise: --check-output: glibc's own runs differ in "
                                     "their stdout (repeat 1 against the first run): the program is "
                                     "not deterministic"), err
    assert load(out)["stopped"]["lock"] == "glibc"


@needs_build
def test_program_that_fails_on_one_lock_stops(run_cli, tmp_path):
    out = tmp_path / "adv"
    rc, stdout, err = run_cli("advise", "--force", "--locks", "glibc,futex3", "--repeat", "3",
                              "--no-progress", "--out", out, "--", LOCKSTATE, "--strict")
    assert rc == 1
    ls = lines(err)
    i = next(k for k, ln in enumerate(ls) if ln.startswith("locklab: "))
    assert ls[i] == ("locklab: advise: locklab-advise-lockstate failed on futex3 (repeat 1 of 3): exit "
                     "status 3, while it succeeds on glibc; a bug in the lock or in the program, so the "
                     "advice stops (never a silent skip)")
    assert ls[i + 1] == "last lines of its stderr:"
    assert "__nusers = 0, glibc's has 1" in ls[i + 2]
    doc = load(out)
    st = doc["stopped"]
    assert st["lock"] == "futex3" and st["status"] == 3 and "__nusers = 0" in st["stderr_tail"]
    assert runs_per_lock(doc)["futex3"] == 1


@needs_build
def test_failed_run_leaves_no_check_output_file(run_cli, tmp_path, monkeypatch):
    """A run that writes the --check-output FILE and then fails stops the advice; the file is
    advise's (it did not exist before), so it goes with the stop instead of blocking the next try
    ("the file exists already")."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "adv"
    rc, stdout, err = run_cli("advise", "--check-output", "state.txt", "--locks", "futex3",
                              "--repeat", "3", "--no-progress", "--out", out, "--", "sh", "-c",
                              'echo same > state.txt; if [ "$LOCKLAB_LOCK" = futex3 ]; then exit 5; fi')
    assert rc == 1
    assert "locklab: advise: sh failed on futex3 (repeat 1 of 3): exit status 5" in err, err
    assert load(out)["stopped"]["lock"] == "futex3"
    assert not (tmp_path / "state.txt").exists()


@needs_build
def test_program_that_fails_on_glibc_stops(run_cli, tmp_path):
    out = tmp_path / "adv"
    rc, stdout, err = run_cli("advise", "--no-progress", "--out", out, "--", "sh", "-c",
                              "echo broken >&2; exit 9")
    assert rc == 1
    assert "locklab: advise: sh failed on glibc (the first run, with the lock profile): exit status 9" \
        in err and "  | broken" in err
    assert load(out)["stopped"]["status"] == 9


@needs_build
def test_a_run_that_times_out_drops_its_lock(run_cli, tmp_path):
    """A lock whose run exceeds --timeout leaves the remaining repeats, is ranked last as "timed out"
    and is said; the others run R times. (The program sleeps on futex3: a stand-in for a lock that
    hangs or convoys.)"""
    out = tmp_path / "adv"
    rc, stdout, err = run_cli("advise", "--locks", "lk_mutex,futex3", "--repeat", "4", "--timeout", "2",
                              "--no-progress", "--out", out, "--", "sh", "-c",
                              'if [ "$LOCKLAB_LOCK" = futex3 ]; then sleep 60; fi; echo done')
    assert rc == 0, err
    doc = load(out)
    assert runs_per_lock(doc) == {"glibc": 4, "lk_mutex": 4, "futex3": 1}
    assert doc["timed_out"]["futex3"]["repeat"] == 1
    last = doc["ranking"][-1]
    assert last["lock"] == "futex3" and last["verdict"] == "timed out" and last["rank"] == 3
    assert sentence_ok(doc["recommendation"]["sentence"])
    assert "futex3 timed out after 2 s in repeat 1" in err
    # dash leaves with _exit: no profile, so advise cannot tell and measures anyway
    assert doc["contention"]["verdict"] == "unknown" and "measuring every lock anyway" in err


@needs_build
def test_regex_that_never_matches(run_cli, tmp_path):
    rc, stdout, err = run_cli("advise", "--no-progress", "--out", tmp_path / "adv", "--metric",
                              "regex:ops=([0-9.]+)", "--higher-is-better", "--", QUIET, "--iters", "10")
    assert rc == 2
    ls = lines(err)
    assert ls[-2] == ("locklab: --metric regex:ops=([0-9.]+): matched nothing in the output of the first "
                      "run (on glibc, with the lock profile), so it cannot compare the locks; last "
                      "lines of that output:")
    assert re.fullmatch(r"  \| locklab-advise-quiet: iters=10 checksum=0x[0-9a-f]+", ls[-1])


@needs_build
def test_regex_that_stops_matching_on_one_lock(run_cli, tmp_path):
    out = tmp_path / "adv"
    rc, stdout, err = run_cli("advise", "--force", "--locks", "futex3", "--repeat", "3", "--no-progress",
                              "--out", out, "--metric", "regex:rate ([0-9]+)", "--higher-is-better",
                              "--", "sh", "-c",
                              'if [ "$LOCKLAB_LOCK" = futex3 ]; then echo no rate; else echo rate 5; fi')
    assert rc == 1
    assert ("locklab: advise: --metric regex:rate ([0-9]+): matched nothing in the output of futex3 "
            "(repeat 1 of 3), though glibc's run had the metric") in err
    assert "last lines of its output:" in err and "  | no rate" in err


@needs_build
def test_metric_from_a_command(run_cli, tmp_path):
    """cmd:COMMAND gets each run's output on stdin; its last number is the metric."""
    out = tmp_path / "adv"
    rc, stdout, err = run_cli("advise", "--force", "--locks", "lk_mutex", "--repeat", "3", "--no-progress",
                              "--out", out, "--metric", "cmd:sed -n 's/.*iters=\\([0-9]*\\).*/\\1/p'",
                              "--higher-is-better", "--", QUIET, "--iters", "1234")
    assert rc == 0, err
    doc = load(out)
    assert doc["metric"]["kind"] == "cmd" and doc["metric"]["higher_is_better"]
    assert all(t["metric"] == 1234.0 for t in doc["runs"]) and len(doc["runs"]) == 6
    rc, stdout, err = run_cli("advise", "--force", "--no-progress", "--out", out, "--metric",
                              "cmd:echo oops >&2; exit 4", "--lower-is-better", "--", QUIET,
                              "--iters", "10")
    assert rc == 2
    assert lines(err)[-2] == ("locklab: --metric cmd:echo oops >&2; exit 4: exit status 4 (oops), reading "
                              "the output of the first run (on glibc, with the lock profile), so it "
                              "cannot compare the locks; last lines of that output:")


@needs_build
def test_budget_too_small(run_cli, tmp_path):
    """The plan comes from the first run's duration (sleep 0.3: at least 300 ms whatever the load)."""
    def advise_sleep(*opts):
        return run_cli("advise", "--force", "--locks", "lk_mutex", "--no-progress", "--out",
                       tmp_path / "adv", *opts, "--", "sleep", "0.3")

    rc, stdout, err = advise_sleep("--budget", "0.02")
    assert rc == 2
    msg = lines(err)[-1]
    assert re.fullmatch(r"locklab: --budget 0\.02 is too small for 3 repeats of 2 locks: the first run "
                        r"took \d+(\.\d+)? ms, so 3 repeats need about [0-9.]+ minutes \(3 x 2 runs "
                        r"\+ 2 profile runs\); give --budget 1", msg), msg
    rc, stdout, err = advise_sleep("--budget", "0.05", "--repeat", "20")
    assert rc == 2
    assert lines(err)[-1].startswith("locklab: --budget 0.05 is too small for --repeat 20 of 2 locks: ")
    # a first run that does not even finish within the budget: what it would need, at least
    rc, stdout, err = advise_sleep("--budget", "0.001")
    assert rc == 2
    assert lines(err)[-1] == ("locklab: --budget 0.001 is too small: the first run (on glibc) did not "
                              "finish within it (60 ms), so 3 repeats of 2 locks would need more than "
                              "0.008 minutes (3 x 2 runs + 2 profile runs); give a larger --budget")


# ------------------------------------------------------------------------------------------------
# bad input before anything runs: one line, exit 2 (127 for a command that does not exist)

BAD = [
    ([], 2, "locklab: advise: expected a command after -- (or --app NAME), got nothing"),
    (["--"], 2, "locklab: advise: expected a command after -- (or --app NAME), got nothing"),
    (["--locks", "glibc,nosuch", "--", "true"], 2,
     "locklab: --locks: expected one of lk_mutex, glibc, futex3"),
    (["--locks", "spin_mcs", "--", "true"], 2, "locklab: --locks: 'spin_mcs' cannot be used by the shim"),
    (["--locks", "glibc", "--", "true"], 2,
     "locklab: --locks: expected at least one lock besides glibc (the baseline), got 'glibc'"),
    (["--locks", "", "--", "true"], 2, "locklab: --locks: expected a value, got ''"),
    (["--repeat", "2", "--", "true"], 2, "locklab: --repeat: expected an integer in [3, 1000], got '2'"),
    (["--budget", "0", "--", "true"], 2,
     "locklab: --budget: expected a number of minutes in (0, 10080], got '0'"),
    (["--budget", "soon", "--", "true"], 2,
     "locklab: --budget: expected a number of minutes in (0, 10080], got 'soon'"),
    (["--timeout", "-1", "--", "true"], 2,
     "locklab: --timeout: expected a number of seconds in (0, 86400], got '-1'"),
    (["--metric", "speed", "--", "true"], 2,
     "locklab: --metric: expected time, regex:PATTERN or cmd:COMMAND, got 'speed'"),
    (["--metric", "regex:", "--higher-is-better", "--", "true"], 2,
     "locklab: --metric: expected a pattern after 'regex:', got 'regex:'"),
    (["--metric", "regex:(", "--higher-is-better", "--", "true"], 2,
     "locklab: --metric: regex:(: not a regular expression"),
    (["--metric", "regex:x=(\\d+)", "--", "true"], 2,
     "locklab: --metric regex:...: say which way is better: add --higher-is-better or --lower-is-better"),
    (["--higher-is-better", "--", "true"], 2,
     "locklab: --higher-is-better: the metric 'time' (the program's wall time) is better lower"),
    (["--higher-is-better", "--lower-is-better", "--", "true"], 2,
     "locklab: --lower-is-better: not allowed with argument --higher-is-better"),
    (["--seed", "-1", "--", "true"], 2, "locklab: --seed: expected an integer in [0, "),
    (["--top", "0", "--", "true"], 2, "locklab: --top: expected an integer in [1, 1000], got '0'"),
    (["--quick", "--", "true"], 2, "locklab: --quick: only with --app NAME (the app's small input)"),
    (["--app", "nosuch"], 2, "locklab: --app: expected one of pigz, xz, zstd"),
    (["--app", "cxx-queue", "--", "true"], 2,
     "locklab: --app: give either --app NAME or -- CMD ARGS, not both (got --app cxx-queue and true)"),
    (["--app", "cxx-queue", "--check-output"], 2,
     "locklab: --check-output: --app cxx-queue decides it"),
    (["--app", "cxx-queue", "--quick", "--metric", "time"], 2,
     "locklab: --metric: --app cxx-queue brings its own metric and direction"),
    (["--app", "cxx-queue", "--higher-is-better"], 2,
     "locklab: --higher-is-better: --app cxx-queue brings its own metric and direction"),
    (["--", "/nonexistent/prog"], 127, "locklab: advise: /nonexistent/prog: no such file"),
    (["--", "no-such-command-anywhere"], 127,
     "locklab: advise: no-such-command-anywhere: command not found"),
    (["--", "data.txt"], 127, "locklab: advise: data.txt: command not found"),
    (["--", "./data.txt"], 126, "locklab: advise: ./data.txt: not an executable file"),
]


@needs_build
@pytest.mark.parametrize("args,status,text", BAD, ids=[" ".join(b[0]) or "(none)" for b in BAD])
def test_bad_input(run_cli, tmp_path, monkeypatch, args, status, text):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.txt").write_text("not a program\n")
    (tmp_path / "data.txt").chmod(0o644)
    rc, out, err = run_cli("advise", "--no-progress", *args)
    assert rc == status, err
    assert one_line(err).startswith(text), err
    assert not (tmp_path / "results").exists()     # nothing ran, nothing was written


@needs_build
def test_bad_output_options(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exists.txt").write_text("old\n")
    rc, out, err = run_cli("advise", "--check-output", "exists.txt", "--", QUIET)
    assert rc == 2 and one_line(err) == (
        "locklab: --check-output exists.txt: the file exists already; each run must write it afresh, "
        "so remove it (or name another file) first")
    rc, out, err = run_cli("advise", "--out", "exists.txt", "--", QUIET)
    assert rc == 2 and one_line(err) == "locklab: --out: expected a directory, got 'exists.txt'"


@needs_build
@pytest.mark.skipif(not shutil.which("gcc"), reason="no C compiler")
def test_statically_linked_program_is_refused(run_cli, tmp_path):
    src = tmp_path / "s.c"
    src.write_text("int main(void) { return 0; }\n")
    exe = tmp_path / "s"
    if subprocess.run(["gcc", "-static", "-o", str(exe), str(src)], capture_output=True).returncode:
        pytest.skip("no static libc (libc6-dev)")
    rc, out, err = run_cli("advise", "--", exe)
    assert rc == 2 and one_line(err).startswith(f"locklab: advise: {exe} is statically linked")


# ------------------------------------------------------------------------------------------------
# the decision on constructed samples: exact

def test_plan_from_the_budget():
    p = advise.plan_repeats(1.0, 3, 600)
    assert p["affordable_repeat"] == 199 and p["repeat"] == advise.MAX_AUTO_REPEAT
    assert p["estimated_s"] == 2 + 10 * 3
    p = advise.plan_repeats(10.0, 4, 600)              # (600 - 20) // 40 = 14 -> capped at 10
    assert p["repeat"] == 10 and p["affordable_repeat"] == 14
    p = advise.plan_repeats(10.0, 12, 600)             # (600 - 20) // 120 = 4
    assert p["repeat"] == 4
    assert advise.plan_repeats(1.0, 3, 60, repeat=50)["repeat"] == 50   # no --budget: as asked
    with pytest.raises(advise.UsageError, match=r"the default budget \(10 minutes\) is too small for 3 "
                       r"repeats of 12 locks: the first run took 20 s, so 3 repeats need about 13 "
                       r"minutes \(3 x 12 runs \+ 2 profile runs\); give --budget 13 or fewer --locks"):
        advise.plan_repeats(20.0, 12, 600)
    with pytest.raises(advise.UsageError, match=r"--budget 1 is too small for --repeat 5 of 2 locks"):
        advise.plan_repeats(10.0, 2, 60, repeat=5, budget_given=True)


def _trial(lock, r, value, cpu=1.0):
    return {"variant": lock, "repeat": r, "ok": True, "status": 0, "timed_out": False, "wall_s": value,
            "user_s": cpu, "sys_s": 0.0, "cpu_s": cpu, "metric": value}


def _decide(samples, hib=False, cpu=None, timed_out=None):
    locks = list(samples)
    ts = [_trial(lk, r, v, (cpu or {}).get(lk, 1.0)) for lk, vs in samples.items()
          for r, v in enumerate(vs)]
    an = trials.analyse(ts, locks, "glibc", hib)
    rows = advise.rank(an, locks, hib, timed_out or {})
    return rows, advise.recommend(rows, an["stats"], hib)


def test_recommendation_for_a_clear_winner():
    rows, rec = _decide({"glibc": [1.3, 1.31, 1.32, 1.33, 1.34],
                         "lk_mutex": [1.0, 1.01, 1.0, 0.99, 1.02],
                         "futex3": [1.29, 1.35, 1.3, 1.4, 1.28]})
    assert [r["lock"] for r in rows][0] == "lk_mutex" and rows[0]["verdict"] == "faster"
    s = rec["sentence"]
    assert re.fullmatch(r"use lk_mutex: 1\.32x \[\d\.\d\d, \d\.\d\d\] faster than glibc, distributions "
                        r"do not overlap", s), s
    assert sentence_ok(s) and rec["lock"] == "lk_mutex" and rec["tied_with"] == []
    lo, hi = rec["speedup_ci95"]
    assert lo <= rec["speedup"] <= hi and lo > 1.0


def test_recommendation_names_locks_tied_with_the_winner_and_its_cpu_cost():
    rows, rec = _decide({"glibc": [2.0, 2.1, 2.05, 2.02, 2.08],
                         "lk_mutex": [1.0, 1.05, 1.02, 1.01, 1.04],
                         "spin_ttas": [1.03, 0.99, 1.01, 1.06, 1.0]},
                        cpu={"glibc": 1.0, "lk_mutex": 1.1, "spin_ttas": 2.5})
    s = rec["sentence"]
    assert sentence_ok(s), s
    assert rec["lock"] in ("lk_mutex", "spin_ttas") and len(rec["tied_with"]) == 1
    assert f"({rec['tied_with'][0]} is tied with it)" in s
    if rec["lock"] == "spin_ttas":
        assert s.endswith("; it uses 2.5x glibc's CPU time per run")


def test_recommendation_when_nothing_beats_glibc():
    rows, rec = _decide({"glibc": [1.0, 1.1, 0.9, 1.05], "lk_mutex": [1.02, 0.95, 1.08, 1.0],
                         "futex3": [1.01, 0.97, 1.1, 0.93]})
    assert rec == {"lock": None, "sentence": "no lock is better than glibc here (all tied)",
                   "speedup": None, "speedup_ci95": None, "mannwhitney_p": None, "tied_with": []}
    rows, rec = _decide({"glibc": [1.0, 1.01, 1.0, 1.02], "lk_mutex": [1.02, 0.99, 1.0, 1.01],
                         "spin_ticket": [3.0, 3.1, 3.2, 3.3], "qspinlock": [5.0]},
                        timed_out={"qspinlock": {"repeat": 2, "timeout_s": 10.0}})
    assert rec["sentence"] == "no lock is better than glibc here (1 tied, 1 slower, 1 timed out)"
    assert [r["lock"] for r in rows][-1] == "qspinlock" and rows[-1]["verdict"] == "timed out"
    assert sentence_ok(rec["sentence"])


def test_higher_is_better_metric():
    rows, rec = _decide({"glibc": [100, 101, 99, 100], "lk_mutex": [150, 151, 149, 152]}, hib=True)
    assert rows[0]["lock"] == "lk_mutex" and rows[0]["speedup"] == pytest.approx(1.505)
    assert rec["sentence"].startswith("use lk_mutex: 1.50x [")


def test_contention_threshold():
    def prof(wait_ns, acq=10, cont=1):
        return {"schema": shim.SCHEMA_STAT, "pid": 1, "argv": ["p"], "totals": {
            "mutexes": 1, "acquisitions": acq, "contended": cont, "wait_ns": wait_ns},
            "mutexes": [{"acquisitions": acq, "contended": cont, "wait_ns_total": wait_ns,
                         "site": {"function": "f", "file": "p.c", "line": 3}}]}
    assert advise.contention([prof(9_999_999)], 1.0)["verdict"] == "does-not-matter"
    assert advise.contention([prof(10_000_000)], 1.0)["verdict"] == "matters"
    c = advise.contention([prof(0, cont=0)], 1.0)
    assert c["hottest"]["site_text"] == "f (p.c:3)"
    assert advise.contention([], 1.0)["verdict"] == "unknown"
    none = advise.contention([{"schema": shim.SCHEMA_STAT, "totals": {}, "mutexes": []}], 1.0)
    assert none["verdict"] == "does-not-matter" and none["hottest"] is None
    assert advise.contention_sentence(none).startswith("locks do not matter for this program: it used "
                                                       "no pthread mutex")


def test_sentence_forms_reject_other_text():
    assert not sentence_ok("use lk_mutex: fast")
    assert not sentence_ok("no lock is better than glibc here")
    assert sentence_ok("no lock is better than glibc here (2 tied, 1 slower)")
    assert stats.ALPHA == 0.05   # the verdict the sentences rest on (stats.verdict)
