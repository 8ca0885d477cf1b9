"""The `advise` section of `locklab report` (python/locklab/report.py) and the advise file's schema on
read (python/locklab/schema/advise.schema.json).

The advise files are synthetic but made by advise's own decision code (trials.analyse, advise.rank,
advise.recommend, advise.contention) from constructed runs and profiles, so they are what `locklab
advise` writes; every one is validated against the schema before it is used. The page is generated
in strict mode (a figure that fails is an error) and opened in headless Chromium as test_report.py
does: every image must decode and the console stay clean. Bad advise files give "locklab: FILE:
<problem>" and exit status 2, leaving no report."""

import copy
import json
import random
import re
from pathlib import Path

import pytest

from locklab import advise, report, shim, trials
from locklab.errors import UsageError

from test_report import DevTools, browser, mutex_results  # noqa: F401  (browser: a fixture)

MACHINE = {"cpu_model": "AMD EPYC", "online_cpus": 2, "kernel": "6.18.0", "arch": "x86_64"}


def _profile(lock, wait_ns, wall_s):
    site = {"addr": "0x1", "how": "first-use", "function": "worker", "file": "/src/prog.c", "line": 57}
    proc = {"schema": shim.SCHEMA_STAT, "pid": 4242, "root": False, "lock": lock, "argv": ["./prog"],
            "totals": {"mutexes": 2, "acquisitions": 100000, "contended": 5000, "wait_ns": wait_ns},
            "mutexes": [{"site": site, "type": "normal", "impl": lock, "acquisitions": 90000,
                         "contended": 5000, "wait_ns_total": wait_ns, "wait_ns_max": 2_000_000,
                         "hold_ns_p99": 480},
                        {"site": dict(site, function="main", line=80), "type": "normal", "impl": lock,
                         "acquisitions": 10000, "contended": 0, "wait_ns_total": 0,
                         "wait_ns_max": 0, "hold_ns_p99": 30}]}
    run = {"variant": lock, "repeat": 0, "ok": True, "status": 0, "timed_out": False,
           "wall_s": wall_s, "user_s": wall_s, "sys_s": 0.1, "cpu_s": wall_s + 0.1, "digest": "ab" * 32,
           "metric": wall_s}
    return {"lock": lock, "run": run, "contention": advise.contention([proc], wall_s),
            "top": shim.top_locks([proc], 5), "file": f"profile-{lock}.json"}


def make_doc(medians, outcome=None, timed_out=(), stopped=None, repeat=6, seed=1):
    """An advise document over locks {lock: median wall time}, glibc first."""
    rng = random.Random(seed)
    locks = list(medians)
    runs = []
    for r in range(repeat):
        order = list(locks)
        rng.shuffle(order)
        for lk in order:
            if lk in timed_out and r > 0:
                continue
            if lk in timed_out:
                runs.append({"variant": lk, "repeat": r, "ok": False, "status": 137, "timed_out": True,
                             "wall_s": 10.0, "user_s": 9.0, "sys_s": 0.5, "cpu_s": 9.5,
                             "error": "timed out after 10s", "stderr_tail": ""})
                continue
            v = medians[lk] * rng.uniform(0.97, 1.03)
            runs.append({"variant": lk, "repeat": r, "ok": True, "status": 0, "timed_out": False,
                         "wall_s": v, "user_s": v * 1.5, "sys_s": v * 0.2, "cpu_s": v * 1.7,
                         "digest": "cd" * 32, "metric": v})
    tmo = {lk: {"repeat": 1, "timeout_s": 10.0} for lk in timed_out}
    an = trials.analyse(runs, locks, "glibc", False)
    rows = advise.rank(an, locks, False, tmo)
    rec = advise.recommend(rows, an["stats"], False)
    best = next(r["lock"] for r in rows if r["lock"] != "glibc")
    profiles = {"glibc": _profile("glibc", 900_000_000, medians["glibc"]),
                best: _profile(best, 300_000_000, medians[best])}
    doc = {"schema": advise.SCHEMA, "command": "locklab advise -- ./prog --threads 16",
           "program": ["./prog", "--threads", "16"], "app": None, "service": None, "cwd": "/tmp",
           "created": "2026-11-24T12:00:00Z", "locklab": {"version": "0.1.0", "commit": "abc"},
           "machine": MACHINE, "metric": {"name": "wall time", "unit": "s", "higher_is_better": False,
                                          "kind": "time"},
           "check_output": "stdout", "baseline": "glibc", "locks": locks, "seed": 0,
           "plan": {"first_run_s": 1.2, "repeat": repeat, "repeat_given": False,
                    "affordable_repeat": 40, "budget_s": 600.0, "budget_given": False,
                    "runs": repeat * len(locks), "estimated_s": 90.0},
           "timeout_s": 12.0, "contention": profiles["glibc"]["contention"], "profiles": profiles,
           "runs": runs, "stats": an["stats"], "comparisons": an["comparisons"], "ranking": rows,
           "timed_out": tmo, "identity": dict(an["identity"], reference="cd" * 32),
           "outcome": "recommend" if rec["lock"] else "keep-glibc", "recommendation": rec,
           "stopped": None}
    if stopped:
        doc.update(outcome="stopped", recommendation=None, stopped=stopped)
    return advise.validate(doc, "synthetic")


def do_not_matter_doc():
    prof = _profile("glibc", 0, 0.5)
    doc = {"schema": advise.SCHEMA, "command": "locklab advise -- ./quiet", "program": ["./quiet"],
           "created": "2026-11-24T12:00:00Z", "machine": MACHINE,
           "metric": {"name": "wall time", "unit": "s", "higher_is_better": False, "kind": "time"},
           "baseline": "glibc", "locks": ["glibc", "lk_mutex"], "plan": None,
           "contention": prof["contention"], "profiles": {"glibc": prof}, "runs": [], "stats": {},
           "comparisons": [], "ranking": [], "outcome": "locks-do-not-matter",
           "recommendation": {"lock": None, "sentence": advise.contention_sentence(prof["contention"]),
                              "tied_with": []}}
    return advise.validate(doc, "synthetic")


def _write(d, name, doc):
    p = d / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def advise_report(tmp_path_factory):
    d = tmp_path_factory.mktemp("adv")
    files = [
        _write(d, "win/advise.json", make_doc({"glibc": 2.0, "lk_mutex": 1.2, "futex3": 1.9,
                                                "spin_ticket": 9.0}, timed_out=("spin_ticket",))),
        _write(d, "tie/advise.json", make_doc({"glibc": 1.0, "lk_mutex": 1.0, "futex3": 1.0})),
        _write(d, "quiet/advise.json", do_not_matter_doc()),
        _write(d, "stop/advise.json", make_doc({"glibc": 1.0, "futex3": 1.0}, repeat=1, stopped={
            "reason": "prog failed on futex3 (repeat 1 of 6): exit status 3, while it succeeds on glibc",
            "lock": "futex3", "repeat": 1, "status": 3, "stderr_tail": "prog: <boom> & bust\n"})),
        _write(d, "mutex.json", mutex_results()),
    ]
    index = Path(report.write_report(files, d / "report", strict=True))
    return files, index, index.read_text(encoding="utf-8")


def _section(page, anchor):
    i = page.index(f'<h2 id="{anchor}">')
    j = page.find("<h2 ", i + 1)
    return page[i:j if j > 0 else len(page)]


def test_the_synthetic_files_are_what_advise_decides(advise_report):
    files, _, _ = advise_report
    win = json.loads(files[0].read_text())
    assert win["recommendation"]["lock"] == "lk_mutex" and win["outcome"] == "recommend"
    assert re.fullmatch(advise.SENTENCE_FORMS[0], win["recommendation"]["sentence"])
    assert win["ranking"][-1]["lock"] == "spin_ticket" and win["ranking"][-1]["verdict"] == "timed out"
    tie = json.loads(files[1].read_text())
    assert tie["recommendation"]["sentence"] == "no lock is better than glibc here (all tied)"


def test_advise_sections(advise_report):
    files, index, page = advise_report
    # the headline carries every recommendation (and the stop), before the sections
    head = page[page.index("<h2 id=headline>"):page.index("<h2>Contents</h2>")]
    for f in files[:4]:
        assert f"({f})" in head
    win = json.loads(files[0].read_text())
    assert f"<li class=\"claim faster\">{win['recommendation']['sentence']}</li>" in head
    assert "no advice: stopped: prog failed on futex3" in head
    assert "1 results file, 4 advise files, " in page
    # the winner's section: sentence, contention, figure, ranked table, both profiles, machine
    sec = _section(page, "a0")
    assert "advise: prog" in sec and f"<b>{win['recommendation']['sentence']}</b>" in sec
    assert "locks matter for this program: its mutexes waited 45 % of its 2 s run on glibc" in sec
    assert "the hottest, worker (prog.c:57), had 5,000 of 90,000 acquisitions contended" in sec
    imgs = re.findall(r'<img src="([^"]+)"', sec)
    assert len(imgs) == 1 and "advise-prog" in imgs[0]
    data = (index.parent / imgs[0]).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    table = sec[sec.index("<table class=advise>"):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr class[^>]*>(.*?)</tr>", table)
    assert [re.findall(r"<td[^>]*>(.*?)</td>", r)[1] for r in rows] == [r["lock"] for r in win["ranking"]]
    assert '<tr class="faster"><td class=num>1</td><td>lk_mutex</td>' in table
    assert "timed out" in table and "Timed out, left out of the remaining repeats: spin_ticket" in sec
    assert "on glibc (profile run: 2 s wall)" in sec and "on lk_mutex (profile run" in sec
    assert "<code>worker (prog.c:57)</code>" in sec and "<h3>Machine</h3>" in sec
    assert "locklab advise -- ./prog --threads 16" in sec
    # locks do not matter: the sentence and the profile, no figure and no table
    quiet = _section(page, "a2")
    assert "locks do not matter for this program" in quiet and "<img" not in quiet
    assert "<table class=advise>" not in quiet and "<table class=profile>" in quiet
    # stopped: the reason and stderr's tail, escaped
    stop = _section(page, "a3")
    assert "Stopped: prog failed on futex3 (repeat 1 of 6): exit status 3" in stop
    assert "prog: &lt;boom&gt; &amp; bust" in stop
    # the results file keeps its own section
    assert 'id="s0"' in page and "(" + str(files[4]) + ")" in page


BAD = [
    ("speedup", lambda d: d["ranking"][0].update(speedup="fast"),
     "malformed advise file: at ranking[0].speedup: expected a number or null, got the string \"fast\""),
    ("outcome", lambda d: d.update(outcome="maybe"),
     "malformed advise file: at outcome: expected \"recommend\" or \"keep-glibc\""),
    ("missing", lambda d: d.pop("contention"), "malformed advise file: \"contention\" is missing"),
    ("sentence", lambda d: d["recommendation"].update(sentence="use it"),
     "malformed advise file: at recommendation.sentence"),
    ("stopped", lambda d: d.update(outcome="stopped", stopped=None),
     "malformed advise file: at stopped: "),
]


@pytest.mark.parametrize("name,change,problem", BAD, ids=[b[0] for b in BAD])
def test_bad_advise_file_is_a_clear_error(tmp_path, capsys, name, change, problem):
    doc = copy.deepcopy(make_doc({"glibc": 2.0, "lk_mutex": 1.0}))
    change(doc)
    bad = _write(tmp_path, "advise.json", doc)
    out = tmp_path / "out"
    with pytest.raises(report.ReportError) as ei:
        report.write_report([bad], out)
    assert isinstance(ei.value, UsageError) and ei.value.status == 2
    assert ei.value.message.startswith(f"{bad}: {problem}"), ei.value.message
    assert not (out / "index.html").exists()

    class Args:
        files = [str(bad)]
        out = str(tmp_path / "out")
    assert report.run(Args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"locklab: {bad}: {problem}"), err


def test_locklab_report_reads_advise_files(tmp_path, run_cli):
    f = _write(tmp_path, "a/advise.json", make_doc({"glibc": 2.0, "lk_mutex": 1.0}))
    rc, out, err = run_cli("report", f, "-o", tmp_path / "rep")
    assert rc == 0, err
    assert out.strip() == str(tmp_path / "rep" / "index.html")
    assert "advise: prog" in (tmp_path / "rep" / "index.html").read_text()


def test_advise_report_renders_in_chromium(advise_report, browser):  # noqa: F811
    _, index, page = advise_report
    dt = browser
    dt.open_page(index)
    res = dt.call("Runtime.evaluate", returnByValue=True, awaitPromise=True, expression="""
        Promise.all(Array.from(document.images).map(i =>
            i.decode().then(() => [i.getAttribute('src'), i.naturalWidth],
                            () => [i.getAttribute('src'), 0])))
            .then(a => ({advise: document.querySelectorAll('table.advise').length,
                         profiles: document.querySelectorAll('table.profile').length,
                         images: a}))""")
    assert "exceptionDetails" not in res, res
    v = res["result"]["value"]
    assert v["advise"] == 3 and v["profiles"] == 7
    assert v["images"] and all(w > 0 for _, w in v["images"]), v["images"]
    dt.call("Runtime.evaluate", expression="1")
    assert dt.errors() == [], dt.errors()
