"""`locklab apps` end to end on the programs that ship with the repo (the C++ queue and the threaded
Python program), its bad input, and the reusable trial machinery of python/locklab/trials.py that
`locklab advise` will use: the schedule, a lock-dependent output caught as a mismatch, a failing
run reported with its stderr. Needs the real build (make build)."""

import json
from pathlib import Path

import pytest

from locklab import shim, trials

REPO = Path(__file__).resolve().parents[2]
needs_build = pytest.mark.skipif(not (REPO / "build" / "liblocklab-preload.so").exists()
                                 or not (REPO / "build" / "locklab-exec").exists(),
                                 reason="shim / locklab-exec not built")


def one_line(err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


@needs_build
def test_apps_quick_end_to_end(run_cli, tmp_path):
    out = tmp_path / "apps.json"
    rc, stdout, err = run_cli("apps", "--quick", "--apps", "cxx-queue,python-threads", "--locks",
                              "glibc,lk_mutex", "--repeat", "3", "--out", str(out), "--no-progress")
    assert rc == 0, err
    doc = json.loads(out.read_text())
    assert doc["schema"] == "locklab-apps/1" and doc["quick"] and doc["baseline"] == "glibc"
    assert shim.check_format(doc) is None       # schema/apps.schema.json
    bad = json.loads(out.read_text())
    del bad["apps"][0]["runs"][1]["repeat"]
    assert shim.check_format(bad) == '"apps[0].runs[1].repeat" is missing'
    assert doc["locks"] == ["glibc", "lk_mutex"] and doc["repeat"] == 3
    assert doc["machine"].get("online_cpus", 0) >= 1
    assert [a["app"] for a in doc["apps"]] == ["python-threads", "cxx-queue"]
    for a in doc["apps"]:
        assert a["deterministic"]
        assert len(a["runs"]) == 6 and all(r["ok"] for r in a["runs"])
        # repeats outermost: each lock once per repeat
        for r in range(3):
            assert sorted(t["variant"] for t in a["runs"] if t["repeat"] == r) == ["glibc", "lk_mutex"]
        for lock in ("glibc", "lk_mutex"):
            s = a["stats"][lock]
            assert s["n"] == 3 and s["failed"] == 0 and s["min"] <= s["median"] <= s["max"]
            assert s["cpu_s_median"] > 0
        (c,) = a["comparisons"]
        assert c["variant"] == "lk_mutex" and c["verdict"] in ("faster", "slower", "tied")
        assert a["identity"]["identical"] and a["identity"]["checked_runs"] == 6
        assert a["identity"]["reference"] and len(a["identity"]["reference"]) == 64
    assert "cxx-queue" in stdout and "identical" in stdout and "wrote" in stdout


@pytest.mark.parametrize("args,text", [
    (["--apps", "nosuch"], "locklab: --apps: expected one of pigz, xz, zstd"),
    (["--locks", "nosuch"], "locklab: --lock: expected one of lk_mutex, glibc"),
    (["--locks", "spin_mcs"], "locklab: --lock: 'spin_mcs' cannot be used by the shim"),
    (["--repeat", "0"], "locklab: --repeat: expected an integer in [1, 1000], got '0'"),
    (["--timeout", "-1"], "locklab: --timeout: expected a number of seconds in (0, 86400], got '-1'"),
    (["--seed", "x"], "locklab: --seed: expected an integer in [0, 9223372036854775807], got 'x'"),
])
@needs_build
def test_apps_bad_input(run_cli, args, text):
    rc, out, err = run_cli("apps", "--quick", *args)
    assert rc == 2
    assert one_line(err).startswith(text)


@needs_build
def test_apps_list(run_cli):
    rc, out, err = run_cli("apps", "--list")
    assert rc == 0
    for name in ("pigz", "xz", "zstd", "sysbench-mutex", "memcached", "kccachetest", "stress-ng",
                 "python-threads", "cxx-queue", "lab-mutex-1t"):
        assert name in out


def test_schedule_repeats_outer_and_shuffled():
    s = trials.schedule(["a", "b", "c"], 4, seed=1)
    assert [r for r, _ in s] == [0] * 3 + [1] * 3 + [2] * 3 + [3] * 3
    orders = {tuple(v for r, v in s if r == k) for k in range(4)}
    assert all(sorted(o) == ["a", "b", "c"] for o in orders) and len(orders) > 1
    assert s == trials.schedule(["a", "b", "c"], 4, seed=1)          # seeded: reproducible
    assert [v for _, v in trials.schedule(["a", "b"], 2, shuffle=False)] == ["a", "b", "a", "b"]


@needs_build
def test_output_that_depends_on_the_lock_is_caught(tmp_path):
    cmd = trials.Command("echo-lock", ["sh", "-c", 'echo "$LOCKLAB_LOCK"'], deterministic=True, timeout=60)
    ts = trials.run_trials(cmd, ["glibc", "lk_mutex", "futex3"], 2, seed=3, workdir=str(tmp_path))
    assert len(ts) == 6 and all(t["ok"] for t in ts)
    an = trials.analyse(ts, ["glibc", "lk_mutex", "futex3"], "glibc", False)
    ident = an["identity"]
    assert not ident["identical"]
    assert sorted({m["variant"] for m in ident["mismatches"]}) == ["futex3", "lk_mutex"]
    assert ident["checked_runs"] == 6


@needs_build
def test_a_failing_run_is_reported(tmp_path):
    cmd = trials.Command("fails-on-futex3", ["sh", "-c", '[ "$LOCKLAB_LOCK" != futex3 ] || '
                         '{ echo "boom on $LOCKLAB_LOCK" >&2; exit 7; }'], timeout=60)
    ts = trials.run_trials(cmd, ["glibc", "futex3"], 2, workdir=str(tmp_path))
    an = trials.analyse(ts, ["glibc", "futex3"], "glibc", False)
    assert an["stats"]["glibc"]["failed"] == 0 and an["stats"]["glibc"]["n"] == 2
    assert an["stats"]["futex3"]["failed"] == 2 and "n" not in an["stats"]["futex3"]
    assert an["stats"]["futex3"]["errors"] == ["exit status 7"]
    bad = [t for t in ts if t["variant"] == "futex3"]
    assert all("boom on futex3" in t["stderr_tail"] for t in bad)
    assert an["comparisons"] == []                  # nothing to compare without a successful run


@needs_build
def test_regex_metric_and_retry(tmp_path):
    flag = tmp_path / "first"
    # exits 3 the first time (a set-up failure to retry), then prints the metric
    cmd = trials.Command("metric", ["sh", "-c", f'if [ ! -e {flag} ]; then touch {flag}; exit 3; fi; '
                                    'echo "rate: 123.5 things/s"'],
                         metric=trials.Metric(name="rate", unit="/s", higher_is_better=True,
                                              regex=r"rate: ([0-9.]+)"),
                         retry_statuses=(3,), retries=2, timeout=60)
    ts = trials.run_trials(cmd, ["none"], 1, workdir=str(tmp_path))
    assert ts[0]["ok"] and ts[0]["metric"] == 123.5 and ts[0]["retried"] == 1
