"""Tests for `locklab report` (python/locklab/report.py).

Synthetic results files (several locks; threads x load axes; latency CDFs; a lockref retry sweep; a
futex-hash layout sweep; a workload the report does not know; files with ill-typed fields) are written
to a temporary directory, the report is generated in strict mode (a figure that fails to draw is an
error, not a note), and the page is opened in real headless Chromium through the DevTools protocol:
the page must load, every <img> must decode with naturalWidth > 0, and the console must stay free of
errors.  Bad input (not JSON, truncated, another schema, a run record, ...) must give
"locklab: FILE: <problem>" and exit status 2, leaving no report behind.

The browser test skips, saying why, when /usr/bin/chromium (Debian package `chromium`, installed by
scripts/install-deps) or the websocket-client package (the [test] extras) is missing.
Set LOCKLAB_REPORT_SCREENSHOT=DIR to keep a full-page screenshot of the rendered report.
"""

import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from locklab import report
from locklab.errors import UsageError

PYDIR = Path(__file__).resolve().parents[1]

MACHINE = {"cpu_model": "AMD EPYC 7B13", "online_cpus": 2, "smt": "off", "kernel": "6.18.0",
           "governor": None, "relax": "x86 pause", "pause_ns": 12.3}


# ---------------------------------------------------------------------------------------------
# synthetic results files
# ---------------------------------------------------------------------------------------------

def _cdf(rng, scale):
    """A plausible latency CDF: log-spaced ns points with fractions rising to 1."""
    pts, f = [], 0.0
    x = 20.0 * scale
    for i in range(24):
        f = min(1.0, f + rng.uniform(0.02, 0.09) * (1.0 if i < 20 else 3.0))
        pts.append([round(x, 1), round(f, 4)])
        x *= 1.8
    pts[-1][1] = 1.0
    return pts


def _stats(values):
    vs = sorted(values)
    med = vs[len(vs) // 2]
    return {"n": len(vs), "values": values, "min": vs[0], "median": med,
            "mean": sum(vs) / len(vs), "max": vs[-1], "stdev": 0.0,
            "ci95": [vs[0] * 1.001, vs[-1] * 0.999]}


def make_results(workload, locks, axes, metric_fn, extra_result=None, baseline=None,
                 repeats=3, latency=True, seed=1):
    """A locklab-results/1 document: every combination of `axes` is a cell; each lock runs
    `repeats` times with metric_fn(lock, params) * noise."""
    rng = random.Random(seed)
    baseline = baseline or locks[-1]
    combos = [{}]
    for k, vs in axes.items():
        combos = [dict(c, **{k: v}) for c in combos for v in vs]
    runs, cells = [], []
    for params in combos:
        stats, meds = {}, {}
        for lock in locks:
            vals = []
            for rep in range(repeats):
                v = metric_fn(lock, params) * rng.uniform(0.9, 1.1)
                vals.append(v)
                thr = params.get("threads", 1)
                thread_ops = [v / thr * rng.uniform(0.5, 1.5) for _ in range(int(thr))]
                mean = sum(thread_ops) / len(thread_ops)
                jain = sum(thread_ops) ** 2 / (len(thread_ops) * sum(t * t for t in thread_ops))
                result = {"ops_per_sec": v, "elapsed_s": 0.3, "total_ops": int(v * 0.3),
                          "fairness_jain": jain, "min_share": min(thread_ops) / mean,
                          "max_share": max(thread_ops) / mean,
                          "cpu_ns_per_op": 2e9 / v * thr / 2, "cpu_user_s": 0.5, "cpu_sys_s": 0.1}
                if latency:
                    cdf = _cdf(rng, 1 + locks.index(lock) + thr / 10)
                    result["latency"] = {"samples": 1000, "p50_ns": cdf[10][0],
                                         "p99_ns": cdf[20][0], "max_ns": cdf[-1][0], "cdf": cdf}
                if extra_result:
                    result.update(extra_result(lock, params, rng))
                runs.append({"schema": "locklab-run/1", "workload": workload, "lock": lock,
                             "params": dict(params, lock=lock, duration=0.3),
                             "machine": MACHINE, "result": result, "repeat": rep})
            st = _stats(vals)
            st["secondary"] = {"cpu_ns_per_op": 2e9 / st["median"],
                               "fairness_jain": 1.0 - 0.1 * locks.index(lock) * params.get("threads", 1) / 300}
            stats[lock] = st
            meds[lock] = st["median"]
        comps = []
        for lock in locks:
            if lock == baseline:
                continue
            r = meds[lock] / meds[baseline]
            comps.append({"lock": lock, "baseline": baseline, "ratio": r,
                          "ratio_ci95": [r * 0.95, r * 1.05], "mannwhitney_p": 0.04,
                          "overlap": abs(r - 1) < 0.05,
                          "verdict": "faster" if r > 1.05 else "slower" if r < 0.95 else "tied"})
        winner = max(meds, key=meds.get)
        cells.append({"params": params, "stats": stats, "comparisons": comps,
                      "winner": winner, "winner_tied_with": []})
    quoted = " ".join(f"--{k} {','.join(str(v) for v in vs)}" for k, vs in axes.items())
    return {"schema": "locklab-results/1", "workload": workload,
            "command": f"locklab bench {workload} --locks {','.join(locks)} {quoted} "
                       f"--repeats {repeats} --out {workload}.json",
            "created": "2026-11-22T02:30:00Z", "machine": MACHINE, "metric": "ops_per_sec",
            "higher_is_better": True, "baseline": baseline, "locks": locks, "axes": axes,
            "fixed": {"duration": 0.3, "parallel": 0}, "runs": runs, "cells": cells}


def mutex_results():
    def tput(lock, p):
        base = 2e7 / (1 + p["load"] / 10) / (1 + math.log2(p["threads"]))
        return base * {"lk_mutex": 1.3, "futex3": 1.0, "glibc_normal": 0.9}[lock]
    return make_results("mutex", ["lk_mutex", "futex3", "glibc_normal"],
                        {"threads": [1, 2, 10, 256], "load": [0, 10, 100]}, tput)


def lockref_results():
    def tput(lock, p):
        r = p["retries"]
        return 5e6 * (1 + 0.3 * math.log10(1 + r)) / (1 + p["threads"] / 8)

    def extra(lock, p, rng):
        return {"cas_failures_per_success": p["threads"] * 3 / (1 + math.log10(1 + p["retries"]))
                * rng.uniform(0.9, 1.1)}
    return make_results("lockref", ["lk_lockref"], {"retries": [0, 1, 10, 100, 1000],
                                                    "threads": [2, 8]}, tput, extra_result=extra,
                        baseline="lk_lockref", latency=False, seed=2)


def futex_hash_results():
    def tput(lock, p):
        return 3e6 * {"packed": 1.0, "split": 1.16, "split-priv": 1.2}[p["layout"]] * \
            (1.1 if lock == "lk_park" else 1.0) * p["threads"] / 2

    def extra(lock, p, rng):
        return {"bytes_per_bucket": 64 if p["layout"] == "packed" else 128}
    return make_results("futex-hash", ["lk_park", "kernel_futex"],
                        {"layout": ["packed", "split", "split-priv"], "threads": [2, 4]}, tput,
                        extra_result=extra, seed=3)


def unknown_results():
    """A workload the report has never heard of, with a string axis and no latency."""
    def tput(lock, p):
        return 1e5 * (2 if p["mode"] == "read" else 1) * (1.2 if lock == "rw_a" else 1)
    return make_results("rwsem-mix", ["rw_a", "rw_b"], {"mode": ["read", "write", "mixed"]},
                        tput, latency=False, seed=4)


def single_cell_results():
    def tput(lock, p):
        return 42.0 if lock == "a" else 40.0
    d = make_results("spin", ["a", "b"], {}, tput, seed=5)
    d["metric"] = "ns_per_op"
    d["higher_is_better"] = False
    return d


def sparse_results():
    """Valid schema, but almost everything optional is missing or ill-typed."""
    return {"schema": "locklab-results/1", "workload": "mutex", "locks": ["x", 7, None],
            "axes": {"threads": [1, 2, True, "many"], "load": "oops"},
            "machine": {"cpu_model": None, "nested": {"a": 1}},
            "runs": [{"lock": "x", "params": {"threads": 1}, "result": {
                "latency": {"cdf": [[0, 0.1], ["a", 0.2], [5, 2.0], [10, 0.5], "junk", [20]]},
                "ops_per_sec": "fast", "fairness_jain": float("nan")}}, "not a run", None],
            "cells": [{"params": {"threads": 1},
                       "stats": {"x": {"median": "high", "ci95": [1], "secondary": []},
                                 "y": {"median": 10.0, "min": 20.0, "max": 5.0,
                                       "ci95": ["a", "b"]}},
                       "comparisons": [{"lock": "y", "ratio": "big", "ratio_ci95": None,
                                        "verdict": 3}, "junk"],
                       "winner": ["x"], "winner_tied_with": "y"},
                      {"params": {"threads": 2}, "stats": None, "comparisons": None},
                      {"params": "bad"}, 17]}


def _write(tmp_path, name, doc):
    p = tmp_path / name
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setenv("LOCKLAB_REPORT_STRICT", "1")


FILES = [("mutex.json", mutex_results), ("lockref.json", lockref_results),
         ("futex-hash.json", futex_hash_results), ("unknown.json", unknown_results),
         ("single.json", single_cell_results), ("sparse.json", sparse_results)]


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    """One report over every synthetic file (drawing is the slow part: done once per module).
    Returns (index path, page text, image names)."""
    d = tmp_path_factory.mktemp("full")
    files = [_write(d, name, fn()) for name, fn in FILES]
    index = Path(report.write_report(files, d / "report", strict=True))
    page = index.read_text(encoding="utf-8")
    return index, page, _imgs(index)


def _imgs(index):
    import re
    return re.findall(r'<img src="([^"]+)"', Path(index).read_text(encoding="utf-8"))


def _section(page, filename):
    """The HTML of the section made from `filename`."""
    i = page.index(f"{filename})</span></h2>")
    j = page.find("<h2 ", i)
    return page[i:j if j > 0 else len(page)]


# ---------------------------------------------------------------------------------------------
# generating the report
# ---------------------------------------------------------------------------------------------

def test_every_figure_is_a_png(full_report):
    index, page, imgs = full_report
    # mutex 4 (throughput, cells, latency, fairness/CPU); lockref 4 (sweep, throughput, cells,
    # fairness/CPU); futex-hash 5 (layouts + the mutex four); unknown 3 (no latency); single cell 3
    # (no throughput-vs-axis); sparse 2 (throughput and cells from its one usable median)
    assert len(imgs) == 4 + 4 + 5 + 3 + 3 + 2, imgs
    assert sorted(p.name for p in index.parent.glob("*.png")) == sorted(imgs)
    for name in imgs:
        data = (index.parent / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000, name
    assert "not drawn" not in page


def test_mutex_section(full_report):
    index, page, imgs = full_report
    sec = _section(page, "mutex.json")
    # throughput vs threads, per-cell bars, latency CDF, fairness/CPU
    for slug in ("mutex-throughput-vs-threads", "mutex-cells", "mutex-latency",
                 "mutex-fairness-cpu"):
        assert sec.count(f"-{slug}.png") == 1, slug
    assert "Not shown" not in sec
    # the command under every figure, and the machine description
    assert sec.count("locklab bench mutex --locks lk_mutex,futex3,glibc_normal") == 5
    assert "AMD EPYC 7B13" in sec and "x86 pause" in sec
    # the comparison table: one row per (cell, non-baseline lock) with verdict classes
    assert sec.count("<tr class=\"faster\">") + sec.count("<tr class=\"slower\">") + \
        sec.count("<tr class=\"tied\">") == 12 * 2
    # the representative latency cell is the one with the most threads and the most load
    assert "threads=256, load=100" in sec


def test_lockref_and_futex_hash_sections(full_report):
    index, page, imgs = full_report
    lr = _section(page, "lockref.json")
    assert "lockref-retry-sweep" in lr and "lockref-throughput-vs-retries" in lr
    # lockref has no latency: said on the page, not drawn
    assert "no run has a latency CDF" in lr and "lockref-latency" not in lr
    # one lock, nothing to compare: its median still appears per cell
    assert lr.count("<td>lk_lockref</td><td>-</td>") == 10
    fh = _section(page, "futex-hash.json")
    assert "futex-hash-layouts" in fh
    assert "Memory cost per bucket" in fh
    assert "<td>split</td><td>lk_park</td><td class=num>128</td>" in fh
    assert "<td>packed</td><td>lk_park</td><td class=num>64</td>" in fh


def test_unknown_and_degenerate_workloads(full_report):
    index, page, imgs = full_report
    u = _section(page, "unknown.json")
    assert "rwsem-mix-throughput-vs-mode" in u and "rwsem-mix-cells" in u
    single = _section(page, "single.json")
    assert "spin-cells" in single and "lower is better" in single
    assert "no axis other than the lock was swept" in single
    sparse = _section(page, "sparse.json")
    assert "This results file records no command." in sparse
    # the one usable median is drawn; the rest is skipped without a crash
    assert "mutex-cells" in sparse and "mutex-latency" not in sparse


def test_rerun_replaces_old_figures(tmp_path, strict):
    out = tmp_path / "out"
    report.write_report([_write(tmp_path, "l.json", lockref_results())], out)
    report.write_report([_write(tmp_path, "u.json", unknown_results())], out)
    on_disk = sorted(p.name for p in out.glob("*.png"))
    assert on_disk == sorted(_imgs(out / "index.html"))


def test_shared_machine_is_described_once(tmp_path, strict):
    files = [_write(tmp_path, "u.json", unknown_results()),
             _write(tmp_path, "s.json", single_cell_results())]
    page = Path(report.write_report(files, tmp_path / "out")).read_text(encoding="utf-8")
    assert page.count("<table class=machine>") == 1
    assert page.count("Machine: as described at the top of the page.") == 2


def test_per_run_calibration_does_not_split_machines(tmp_path, strict):
    """pause_ns is measured by every run: files from one machine differ in it and still share it;
    a different CPU count is a different machine."""
    a, b, c = unknown_results(), single_cell_results(), single_cell_results()
    b["machine"] = dict(MACHINE, pause_ns=MACHINE.get("pause_ns", 30.0) + 1.7)
    c["machine"] = dict(MACHINE, online_cpus=16)
    page = Path(report.write_report([_write(tmp_path, "a.json", a), _write(tmp_path, "b.json", b)],
                                    tmp_path / "out")).read_text(encoding="utf-8")
    assert page.count("<table class=machine>") == 1 and "different machines" not in page
    page = Path(report.write_report([_write(tmp_path, "a.json", a), _write(tmp_path, "c.json", c)],
                                    tmp_path / "out2")).read_text(encoding="utf-8")
    assert "These files come from 2 different machines" in page


def test_html_escapes_untrusted_strings(tmp_path, strict):
    d = unknown_results()
    d["command"] = "locklab bench x --lock '<script>alert(1)</script>'"
    d["locks"] = ["<b>rw_a</b>", "rw_b"]
    for c in d["cells"]:
        c["stats"]["<b>rw_a</b>"] = c["stats"].pop("rw_a")
    index = report.write_report([_write(tmp_path, "x.json", d)], tmp_path / "out")
    page = Path(index).read_text(encoding="utf-8")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<b>rw_a</b>" not in page


# ---------------------------------------------------------------------------------------------
# bad input: "locklab: FILE: <problem>", exit 2, no report
# ---------------------------------------------------------------------------------------------

BAD = [
    ("notjson.json", b"hello, world\n", "not JSON"),
    ("truncated.json", json.dumps(mutex_results()).encode()[:5000], "truncated JSON"),
    ("empty.json", b"", "empty file"),
    ("binary.json", b"\xff\xfe\x00garbage", "not UTF-8"),
    ("array.json", b"[1, 2, 3]", "top level is a JSON array"),
    ("noschema.json", b'{"workload": "mutex"}', "no \"schema\" field"),
    ("v2.json", b'{"schema": "locklab-results/2", "workload": "mutex"}',
     "unsupported schema \"locklab-results/2\""),
    ("run.json", b'{"schema": "locklab-run/1", "workload": "mutex"}', "single run record"),
    ("noworkload.json", b'{"schema": "locklab-results/1"}', "\"workload\" is missing"),
    ("cells.json", b'{"schema": "locklab-results/1", "workload": "m", "cells": {}}',
     "\"cells\" is a JSON object, expected an array"),
]


@pytest.mark.parametrize("name,content,problem", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_a_clear_error(tmp_path, capsys, name, content, problem):
    bad = tmp_path / name
    bad.write_bytes(content)
    good = _write(tmp_path, "good.json", unknown_results())
    out = tmp_path / "out"
    with pytest.raises(report.ReportError) as ei:
        report.write_report([good, bad], out)
    assert isinstance(ei.value, UsageError) and ei.value.status == 2
    assert ei.value.message.startswith(f"{bad}: ") and problem in ei.value.message
    assert not (out / "index.html").exists()

    class Args:
        files = [str(good), str(bad)]
    Args.out = str(out)
    assert report.run(Args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"locklab: {bad}: ") and problem in err[0], err


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(report.ReportError, match="no such file"):
        report.write_report([tmp_path / "nope.json"], tmp_path / "out")
    with pytest.raises(report.ReportError, match="is a directory"):
        report.write_report([tmp_path], tmp_path / "out")


def test_unwritable_output_dir(tmp_path):
    good = _write(tmp_path, "good.json", unknown_results())
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(report.ReportError, match="cannot create the output directory"):
        report.write_report([good], blocker / "sub")


def test_command_line_exit_status(tmp_path):
    """`python -m locklab.report` (what cli.py's `report` subcommand wraps): exit 0 / 2."""
    env = dict(os.environ, PYTHONPATH=str(PYDIR), MPLBACKEND="Agg")
    bad = tmp_path / "bad.json"
    bad.write_text("{\"schema\": \"locklab-results/1\", \"workl")
    p = subprocess.run([sys.executable, "-m", "locklab.report", str(bad), "-o",
                        str(tmp_path / "o")], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2
    assert p.stderr.startswith(f"locklab: {bad}: truncated JSON"), p.stderr
    good = _write(tmp_path, "good.json", unknown_results())
    p = subprocess.run([sys.executable, "-m", "locklab.report", str(good), "-o",
                        str(tmp_path / "o")], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert Path(p.stdout.strip()) == tmp_path / "o" / "index.html"


def test_locklab_report_subcommand(tmp_path, run_cli):
    """The wiring in cli.py: `locklab report FILES -o DIR` (run_cli comes from conftest.py)."""
    good = _write(tmp_path, "good.json", single_cell_results())
    rc, out, err = run_cli("report", good, "-o", tmp_path / "r")
    assert rc == 0, err
    assert out.strip() == str(tmp_path / "r" / "index.html")
    bad = tmp_path / "v9.json"
    bad.write_text('{"schema": "locklab-results/9", "workload": "mutex"}')
    rc, out, err = run_cli("report", good, bad, "-o", tmp_path / "r2")
    assert rc == 2
    assert err.strip() == (f"locklab: {bad}: unsupported schema \"locklab-results/9\" "
                           "(this locklab reads \"locklab-results/1\")")
    assert not (tmp_path / "r2").exists()


# ---------------------------------------------------------------------------------------------
# the page in a real browser
# ---------------------------------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"


class DevTools:
    """The smallest DevTools-protocol client the test needs: commands and collected events."""

    def __init__(self, ws_url, deadline):
        import websocket
        self.deadline = deadline
        self.ws = websocket.create_connection(ws_url, timeout=10, suppress_origin=True)
        self.next_id = 0
        self.events = []

    def _recv(self):
        if time.monotonic() > self.deadline:
            raise TimeoutError("browser did not answer in time")
        return json.loads(self.ws.recv())

    def call(self, method, **params):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = self._recv()
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method):
        for ev in self.events:
            if ev["method"] == method:
                return ev
        while True:
            msg = self._recv()
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg

    def errors(self):
        out = []
        for ev in self.events:
            m, p = ev["method"], ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(f"console.{p['type']}: {p.get('args')}")
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p.get('exceptionDetails')}")
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                out.append(f"log: {e.get('text')} {e.get('url', '')}")
        return out


@pytest.fixture
def browser(tmp_path):
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"{CHROMIUM} not found: install the Debian package `chromium` "
                    "(scripts/install-deps does) to run the browser test")
    pytest.importorskip("websocket", reason="websocket-client not installed "
                        "(pip install -e '.[test]')")
    profile = tmp_path / "chromium-profile"
    log = open(tmp_path / "chromium.log", "wb")
    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--remote-debugging-port=0",
         "--remote-allow-origins=*", "--window-size=1280,900", "about:blank"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 90
    try:
        port_file = profile / "DevToolsActivePort"
        while not port_file.exists() or not port_file.read_text().strip():
            if proc.poll() is not None:
                pytest.fail(f"chromium exited with {proc.returncode}: "
                            f"{(tmp_path / 'chromium.log').read_text(errors='replace')[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail("chromium did not open its DevTools port within 90 s")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            targets = json.load(r)
        page = next(t for t in targets if t.get("type") == "page")
        dt = DevTools(page["webSocketDebuggerUrl"], deadline)
        yield dt
        dt.ws.close()
    finally:
        log.close()
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # chromium's own process group, started above
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)


def test_report_renders_in_chromium(full_report, browser):
    index, _, expected = full_report

    dt = browser
    dt.call("Runtime.enable")
    dt.call("Log.enable")
    dt.call("Page.enable")
    dt.call("Page.navigate", url=index.resolve().as_uri())
    dt.wait_event("Page.loadEventFired")
    res = dt.call("Runtime.evaluate", returnByValue=True, awaitPromise=True, expression="""
        Promise.all(Array.from(document.images).map(i =>
            i.decode().then(() => [i.getAttribute('src'), i.naturalWidth, i.naturalHeight],
                            () => [i.getAttribute('src'), 0, 0])))
            .then(a => ({title: document.title, h1: document.querySelector('h1').textContent,
                         tables: document.querySelectorAll('table.comparisons').length,
                         images: a}))""")
    assert "exceptionDetails" not in res, res
    page = res["result"]["value"]
    assert page["title"] == "locklab report" and page["h1"] == "locklab report"
    assert page["tables"] == len(FILES)
    srcs = [src for src, _, _ in page["images"]]
    assert srcs == expected
    broken = [(src, w, h) for src, w, h in page["images"] if not (w > 0 and h > 0)]
    assert not broken, f"images that did not render: {broken}"

    shot_dir = os.environ.get("LOCKLAB_REPORT_SCREENSHOT")
    if shot_dir:
        import base64
        metrics = dt.call("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = dt.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                       clip={"x": 0, "y": 0, "width": 1280,
                             "height": min(size["height"], 16000), "scale": 1})
        Path(shot_dir).mkdir(parents=True, exist_ok=True)
        Path(shot_dir, "report.png").write_bytes(base64.b64decode(shot["data"]))
        shutil.copytree(index.parent, Path(shot_dir, "report"), dirs_exist_ok=True)

    # late console messages (e.g. an image that failed after load) arrive before this answer
    dt.call("Runtime.evaluate", expression="1")
    assert dt.errors() == [], dt.errors()
