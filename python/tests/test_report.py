"""Tests for `locklab report` (python/locklab/report.py).

Synthetic results files (several locks; threads x load axes; latency CDFs; a lockref retry sweep; a
futex-hash layout sweep; a workload the report does not know; files with ill-typed fields) are written
to a temporary directory, the report is generated in strict mode (a figure that fails to draw is an
error, not a note), and the page is opened in real headless Chromium through the DevTools protocol:
the page must load, every <img> must decode with naturalWidth > 0, and the console must stay free of
errors.  Bad input (not JSON, truncated, another schema, a run record, ...) must give
"locklab: FILE: <problem>" and exit status 2, leaving no report behind.

The browser test skips, saying why, when /usr/bin/chromium (Debian package `chromium`, installed by
scripts/install-deps) or the websocket-client package (the [test] extras) is missing; with CI set in
the environment (.ci/run) it fails instead.
Set LOCKLAB_REPORT_SCREENSHOT=DIR to keep a full-page screenshot of the rendered report.
"""

import json
import math
import re
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


def mutex_results(repeats=3):
    def tput(lock, p):
        base = 2e7 / (1 + p["load"] / 10) / (1 + math.log2(p["threads"]))
        return base * {"lk_mutex": 1.3, "futex3": 1.0, "glibc_normal": 0.9}[lock]
    return make_results("mutex", ["lk_mutex", "futex3", "glibc_normal"],
                        {"threads": [1, 2, 10, 256], "load": [0, 10, 100]}, tput,
                        repeats=repeats)


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


def minimal_results():
    """Valid against the schema, but with every optional field missing: no command, machine,
    latency, secondary medians, CIs, comparisons or winner; one lock without a median."""
    return {"schema": "locklab-results/1", "workload": "mutex", "metric": "ops_per_sec",
            "higher_is_better": True, "locks": ["x", "y"], "axes": {"threads": [1, 2]},
            "fixed": {}, "runs": [{"schema": "locklab-run/1", "workload": "mutex", "lock": "x",
                                   "params": {"threads": 1}, "result": {
                                       "ops_per_sec": 5.0, "elapsed_s": 0.3, "total_ops": 2}}],
            "cells": [{"params": {"threads": 1},
                       "stats": {"x": {"values": [5.0], "median": 5.0},
                                 "y": {"values": [10.0]}}},
                      {"params": {"threads": 2}, "stats": {}}]}


def zero_ops_results():
    """glibc_pi did zero operations in every run at 256 threads: flagged, not drawn as 0."""
    d = mutex_results()
    for c in d["cells"]:
        if c["params"]["threads"] == 256:
            st = c["stats"]["futex3"]
            st.update(values=[0.0] * st["n"], min=0.0, median=0.0, mean=0.0, max=0.0,
                      ci95=[0.0, 0.0], flags=[f"{st['n']} of {st['n']} runs did zero operations"])
            c["busy_runs"], c["judged_runs"] = 2, 9
    return d


def _write(tmp_path, name, doc):
    p = tmp_path / name
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setenv("LOCKLAB_REPORT_STRICT", "1")


FILES = [("mutex.json", mutex_results), ("lockref.json", lockref_results),
         ("futex-hash.json", futex_hash_results), ("unknown.json", unknown_results),
         ("single.json", single_cell_results), ("minimal.json", minimal_results)]


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
    # heatmap (files with two locks or more), then: mutex 4 (throughput, cells, latency,
    # fairness/CPU); lockref 4 (sweep, throughput, cells, fairness/CPU; one lock: no heatmap);
    # futex-hash 5 (layouts + the mutex four); unknown 3 (no latency); single cell 3 (no
    # throughput-vs-axis); minimal 3 (heatmap, throughput and cells from its one median)
    assert len(imgs) == (1 + 4) + 4 + (1 + 5) + (1 + 3) + (1 + 3) + 3, imgs
    assert sorted(p.name for p in index.parent.glob("*.png")) == sorted(imgs)
    for name in imgs:
        data = (index.parent / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000, name
    assert "not drawn" not in page


def test_mutex_section(full_report):
    index, page, imgs = full_report
    sec = _section(page, "mutex.json")
    # the heatmap first, then throughput vs threads, per-cell bars, latency CDF, fairness/CPU
    slugs = ("mutex-heatmap", "mutex-throughput-vs-threads", "mutex-cells", "mutex-latency",
             "mutex-fairness-cpu")
    for slug in slugs:
        assert sec.count(f"-{slug}.png") == 1, slug
    assert [sec.index(f"-{slug}.png") for slug in slugs] == \
        sorted(sec.index(f"-{slug}.png") for slug in slugs)
    assert "Not shown" not in sec
    # the command under every figure, and the machine description
    assert sec.count("locklab bench mutex --locks lk_mutex,futex3,glibc_normal") == 6
    assert "AMD EPYC 7B13" in sec and "x86 pause" in sec
    # the comparison table, grouped by cell: one header row per cell naming the winner once, then
    # one row per lock; the non-baseline rows carry a verdict class
    assert sec.count("<tr class=cellhead>") == 12
    assert sec.count("&mdash; winner <b>lk_mutex</b>") == 12
    assert sec.count("<tr class=\"faster\">") + sec.count("<tr class=\"slower\">") + \
        sec.count("<tr class=\"tied\">") == 12 * 2
    assert sec.count("<td class=verdict>baseline</td>") == 12
    assert "<th>ranges overlap<br>(min..max)</th>" in sec and "CIs overlap" not in sec
    # the focus lock is bold in the table
    assert sec.count("<td><b>lk_mutex</b> *</td>") == 12
    # the representative latency cell is the one with the most threads and the most load
    assert "threads=256, load=100" in sec


def test_lockref_and_futex_hash_sections(full_report):
    index, page, imgs = full_report
    lr = _section(page, "lockref.json")
    assert "lockref-retry-sweep" in lr and "lockref-throughput-vs-retries" in lr
    # lockref has no latency: said on the page, not drawn
    assert "no run has a latency CDF" in lr and "lockref-latency" not in lr
    # one lock, nothing to compare: its median still appears per cell, and there is no heatmap
    assert lr.count("<tr class=\"\"><td>lk_lockref *</td>") == 10
    assert "heatmap: skipped, one lock only: nothing to compare" in lr
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
    minimal = _section(page, "minimal.json")
    assert "This results file records no command." in minimal
    # the one usable median is drawn; the rest is skipped without a crash
    assert "mutex-cells" in minimal and "mutex-latency" not in minimal


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
    d["locks"] = ["<i>rw_a</i>", "rw_b"]
    for c in d["cells"]:
        c["stats"]["<i>rw_a</i>"] = c["stats"].pop("rw_a")
        c["winner"] = "<i>rw_a</i>"
    index = report.write_report([_write(tmp_path, "x.json", d)], tmp_path / "out")
    page = Path(index).read_text(encoding="utf-8")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<i>" not in page and "&lt;i&gt;rw_a&lt;/i&gt;" in page


# ---------------------------------------------------------------------------------------------
# the headline, the heatmap, flags, focus, summary.md
# ---------------------------------------------------------------------------------------------

def test_headline_comes_first(full_report):
    index, page, imgs = full_report
    head = page[page.index("<h2 id=headline>"):page.index("<h2>Contents</h2>")]
    assert page.index("<h2 id=headline>") < page.index("<h2 id=\"s0\">")
    # mutex: lk_mutex (1.3x) beats futex3 (1.0x) and glibc_normal (0.9x) in every cell... as far as
    # three noisy repeats allow; the counts are the lab's verdicts, each row sums to the 12 cells
    table = head[head.index("mutex.json"):head.index("lockref.json")]
    assert "<b>lk_mutex</b> against every other lock (the library&#x27;s mutex)" in table
    rows = re.findall(r"<tr><td>(\w+)</td><td class=\"num faster\">(\d+)</td>"
                      r"<td class=num>(\d+)</td><td class=\"num slower\">(\d+)</td>", table)
    assert [r[0] for r in rows] == ["futex3", "glibc_normal"]
    assert all(int(a) + int(b) + int(c) == 12 and int(c) == 0 for _, a, b, c in rows)
    # a file without lk_mutex: the first lock that is not the baseline, and why
    unknown = head[head.index("unknown.json"):head.index("single.json")]
    assert "<b>rw_a</b> against every other lock (lk_mutex is not in this file: the first lock " \
        "listed that is not the baseline)" in unknown
    # one lock only
    assert "one lock only: nothing to compare" in head[head.index("lockref.json"):]


def test_headline_lists_the_cells_the_focus_loses(tmp_path, strict):
    d = mutex_results(repeats=5)
    for c in d["cells"]:  # futex3 at three times lk_mutex's throughput where threads = 2
        if c["params"]["threads"] == 2:
            st = c["stats"]["futex3"]
            st["values"] = [v * 3 for v in c["stats"]["lk_mutex"]["values"]]
    page = Path(report.write_report([_write(tmp_path, "m.json", d)],
                                    tmp_path / "out")).read_text()
    row = re.search(r"<tr><td>futex3</td>.*?</tr>", page).group(0)
    assert '<td class="num slower">3</td>' in row
    lost = re.findall(r"threads=2, load=(\d+) \(0\.33x \[[0-9.]+, [0-9.]+\]\)", row)
    assert lost == ["0", "10", "100"]


def test_demo_claims_on_top(tmp_path, strict):
    d = mutex_results()
    d["headline"] = {"title": "Headline: lk_mutex vs glibc_normal", "claims": [
        {"text": "10 threads, load 1: lk_mutex 1.90x [1.60, 2.40] glibc_normal, no overlap: "
                 "faster", "verdict": "faster", "busy": False},
        {"text": "2 threads, load 0: lk_mutex 0.83x [0.69, 1.29] glibc_normal, ranges overlap: "
                 "no verdict (machine busy during 3 of 10 runs)", "verdict": "busy", "busy": True}],
        "busy_note": "The machine was busy during 3 of 60 runs"}
    page = Path(report.write_report([_write(tmp_path, "m.json", d)],
                                    tmp_path / "out")).read_text()
    first = page.index("<h2 id=headline>")
    assert page.index("<ul class=claims>") > first
    assert page.index("<ul class=claims>") < page.index("<table class=headline>")
    assert '<li class="claim faster">10 threads, load 1: lk_mutex 1.90x [1.60, 2.40] ' \
        "glibc_normal, no overlap: faster</li>" in page
    assert '<li class="claim busy">2 threads, load 0:' in page
    assert "<p class=busy>The machine was busy during 3 of 60 runs</p>" in page


def test_heatmap_marks_flags_and_busy_cells(tmp_path, strict, monkeypatch):
    """The heatmap's squares: ratio to the cell's best, * / = marks, ! for flagged runs, grey for
    no runs; rows of busy cells say so.  The flagged zero median is not drawn in the line plot."""
    texts = {}
    real_save = report.Figures.save

    def save(self, fig, slug):
        texts[slug] = [t.get_text() for ax in fig.axes for t in ax.texts] + \
            [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
        texts[slug + ":lines"] = [(c.get_label(), list(c.lines[0].get_xdata()),
                                   c.lines[0].get_linewidth(), c.lines[0].get_alpha())
                                  for ax in fig.axes for c in ax.containers
                                  if hasattr(c, "lines") and c.lines[0] is not None]
        texts[slug + ":yscale"] = [ax.get_yscale() for ax in fig.axes]
        return real_save(self, fig, slug)
    monkeypatch.setattr(report.Figures, "save", save)
    page = Path(report.write_report([_write(tmp_path, "z.json", zero_ops_results())],
                                    tmp_path / "out", focus="futex3")).read_text()
    heat = texts["mutex-heatmap"]
    assert sum(1 for t in heat if t.endswith("*")) == 12  # one winner per cell
    assert heat.count("0!") == 3  # futex3's zero runs at 256 threads, flagged
    assert sum(1 for t in heat if t.startswith("threads=256") and t.endswith("(busy: 2 runs)")) == 3
    # the line plot leaves the zero medians out and says so; futex3 (--focus) is bold
    lines = texts["mutex-throughput-vs-threads:lines"]
    fx = [ln for ln in lines if ln[0] == "futex3"]
    assert fx and all(3 not in ln[1] for ln in fx)  # x index 3 = 256 threads
    assert all(ln[2] == 3.0 for ln in fx)
    assert all(ln[3] < 1 for ln in lines if ln[0] == "lk_mutex")
    assert "not drawn, their runs did zero operations: futex3 at threads=256, load=0" in page
    # CPU per op on a log scale, fairness linear
    assert texts["mutex-fairness-cpu:yscale"].count("log") == 3
    # the table flags the runs and marks the busy cells
    assert page.count("<td class=flag>5 of 5 runs did zero operations</td>") == 0
    assert page.count("<td class=flag>3 of 3 runs did zero operations</td>") == 3
    assert page.count("<span class=busy>busy machine: 2 of 9 runs</span>") == 3
    assert "<b>futex3</b> against every other lock (--focus)" in page


def test_focus_not_in_file(tmp_path, strict):
    page = Path(report.write_report([_write(tmp_path, "m.json", mutex_results())],
                                    tmp_path / "out", focus="nosuch")).read_text()
    assert "<b>lk_mutex</b> against every other lock (--focus nosuch is not in this file)" in page


def test_summary_md_is_included(tmp_path, strict, run_cli):
    d = tmp_path / "suite"
    d.mkdir()
    files = [_write(d, "m.json", mutex_results()), _write(d, "u.json", unknown_results())]
    (d / "summary.md").write_text(
        "# locklab suite\n\nMachine: `AMD` with **2** CPUs, see [docs](x.md).\n\n"
        "## seed004-mutex\n\n| cell | winner |\n|---|---|\n| threads=1 | <lk_mutex> |\n\n"
        "- one\n- two\n  continued\n")
    rc, out, err = run_cli("report", *files, "-o", tmp_path / "r")
    assert rc == 0, err
    page = (tmp_path / "r" / "index.html").read_text()
    summ = page[page.index("<h2 id=summary>"):]
    assert "<h3>locklab suite</h3>" in summ and "<h4>seed004-mutex</h4>" in summ
    assert "<p>Machine: <code>AMD</code> with <b>2</b> CPUs, see docs.</p>" in summ
    assert "<tr><th>cell</th><th>winner</th></tr><tr><td>threads=1</td><td>&lt;lk_mutex&gt;" \
        "</td></tr>" in summ
    assert "<ul><li>one</li><li>two continued</li></ul>" in summ
    assert '<a href="#summary">summary.md</a>' in page
    # files from different directories: no summary unless given
    other = _write(tmp_path, "o.json", single_cell_results())
    rc, out, err = run_cli("report", files[0], other, "-o", tmp_path / "r2")
    assert "id=summary" not in (tmp_path / "r2" / "index.html").read_text()
    rc, out, err = run_cli("report", other, "--summary", tmp_path / "nope.md", "-o", tmp_path / "r3")
    assert rc == 2 and err == f"locklab: {tmp_path / 'nope.md'}: cannot read: No such file or " \
        "directory\n"


def test_committed_results_validate():
    """Every JSON file in docs/results names its format and satisfies that format's published JSON
    Schema: results files (the suite record) schema/results.schema.json, the shim's, apps' and
    conformance files theirs (locklab.shim.FORMATS), advise files schema/advise.schema.json. A format
    without a schema fails."""
    from locklab import advise, results, shim
    root = PYDIR.parent / "docs" / "results"
    files = sorted(root.rglob("*.json"))
    assert files
    seen = set()
    for f in files:
        schema = json.loads(f.read_text()).get("schema")
        assert isinstance(schema, str) and schema.startswith("locklab-"), f"{f}: no schema name"
        assert schema in (results.SCHEMA, advise.SCHEMA) or schema in shim.FORMATS, \
            f"{f}: no JSON Schema for {schema}"
        if schema == results.SCHEMA:
            results.load(f)
        elif schema == advise.SCHEMA:
            advise.load(f)
        else:
            shim.load_format(f)
        seen.add(schema)
    assert results.SCHEMA in seen and len(seen) > 1


# ---------------------------------------------------------------------------------------------
# bad input: "locklab: FILE: <problem>", exit 2, no report
# ---------------------------------------------------------------------------------------------

BAD = [
    ("notjson.json", b"hello, world\n", "not JSON"),
    ("truncated.json", json.dumps(mutex_results()).encode()[:5000], "truncated JSON"),
    ("empty.json", b"", "empty file"),
    ("binary.json", b"\xff\xfe\x00garbage", "not UTF-8"),
    ("array.json", b"[1, 2, 3]", "top level is a JSON array"),
    ("noschema.json", b'{"workload": "mutex"}', "not a locklab results file: no \"schema\" field"),
    ("v2.json", b'{"schema": "locklab-results/2", "workload": "mutex"}',
     "unsupported schema \"locklab-results/2\""),
    ("run.json", b'{"schema": "locklab-run/1", "workload": "mutex"}', "single run record"),
    ("noworkload.json", b'{"schema": "locklab-results/1"}', "\"workload\" is missing"),
    ("cells.json", json.dumps(dict(minimal_results(), cells={})).encode(),
     "malformed results file: at cells: expected an array, got a JSON object"),
    ("median.json", json.dumps(dict(minimal_results(), cells=[
        {"params": {}, "stats": {"x": {"values": [1.0], "median": "high"}}}])).encode(),
     "at cells[0].stats.x.median: expected a number, got the string \"high\""),
    ("locks.json", json.dumps(dict(minimal_results(), locks=["x", 7])).encode(),
     "at locks[1]: expected a string, got the number 7"),
    ("cdf.json", json.dumps(dict(minimal_results(), runs=[
        {"schema": "locklab-run/1", "workload": "mutex", "params": {}, "result": {
            "ops_per_sec": 1.0, "elapsed_s": 0.3}}])).encode(),
     "\"runs[0].result.total_ops\" is missing"),
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

    def open_page(self, path):
        """Enables the runtime, log and page domains, navigates to the file and waits for its load."""
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable")
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_event("Page.loadEventFired")

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


def _missing(reason):
    """Without the browser the report test cannot run: a skip on a developer's machine, a failure
    under CI (CI is set), where scripts/install-deps must have installed it."""
    if os.environ.get("CI"):
        pytest.fail(f"CI is set and {reason}")
    pytest.skip(reason)


def test_missing_browser_fails_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set and chromium is missing"):
        _missing("chromium is missing")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="chromium is missing"):
        _missing("chromium is missing")


@pytest.fixture
def browser(tmp_path):
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        _missing(f"{CHROMIUM} not found: install the Debian package `chromium` "
                 "(scripts/install-deps does) to run the browser test")
    import importlib.util
    if importlib.util.find_spec("websocket") is None:
        _missing("websocket-client not installed (pip install -e '.[test]')")
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
    dt.open_page(index)
    res = dt.call("Runtime.evaluate", returnByValue=True, awaitPromise=True, expression="""
        Promise.all(Array.from(document.images).map(i =>
            i.decode().then(() => [i.getAttribute('src'), i.naturalWidth, i.naturalHeight],
                            () => [i.getAttribute('src'), 0, 0])))
            .then(a => ({title: document.title, h1: document.querySelector('h1').textContent,
                         tables: document.querySelectorAll('table.comparisons').length,
                         headline: document.querySelectorAll('#headline ~ table.headline').length,
                         firstH2: document.querySelector('h2').id,
                         cellheads: document.querySelectorAll('tr.cellhead').length,
                         summary: !!document.getElementById('summary'),
                         firstImgs: Array.from(document.querySelectorAll('h2[id^=s]')).map(h => {
                             let e = h.nextElementSibling;
                             while (e && e.tagName !== 'FIGURE' && e.tagName !== 'H2')
                                 e = e.nextElementSibling;
                             return e && e.tagName === 'FIGURE' ?
                                 e.querySelector('img').getAttribute('src') : null; }),
                         images: a}))""")
    assert "exceptionDetails" not in res, res
    page = res["result"]["value"]
    assert page["title"] == "locklab report" and page["h1"] == "locklab report"
    assert page["tables"] == len(FILES)
    # the headline comes first (a focus table for every file with two locks or more), each
    # section's first figure is its heatmap, the comparison tables are grouped by cell
    assert page["firstH2"] == "headline" and page["headline"] == len(FILES) - 1
    firsts = page["firstImgs"]
    assert len(firsts) == len(FILES)
    assert ["heatmap" in (f or "") for f in firsts] == [True, False, True, True, True, True]
    assert page["cellheads"] > len(FILES)
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
