"""scripts/frontier: throughput against p99 per cell for scripts/mutex-ab variants
(docs/results/issue11-frontier-2core). It must put on the Pareto front exactly the variants no other
beats on both medians, judge a tuning behind when ANY peer beats it by the lab's rule (naming the worst
ratio), say "meets both" only when neither metric is behind, and refuse bad input with a clear message."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FRONTIER = ROOT / "scripts" / "frontier"


def line(variant, threads, ops, p99):
    return json.dumps({"variant": variant, "cell": {"threads": threads, "cs_ns": 1, "parallel_ratio": 0},
                       "metrics": {"ops_per_sec": ops, "p99_ns": p99}})


def write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def frontier(*args):
    return subprocess.run([sys.executable, str(FRONTIER), *args], capture_output=True, text=True)


def rows(out, threads):
    """{variant (without the front mark): (front?, cells...)} of one cell's table."""
    sec = out.split(f"## threads={threads}, cs-ns=1, parallel-ratio=0")[1].split("##")[0]
    got = {}
    for l in sec.splitlines():
        if l.startswith("| ") and not l.startswith("| variant"):
            cells = [c.strip() for c in l.strip("|").split("|")]
            name = cells[0]
            got[name.rstrip(" *")] = (name.endswith("*"), cells[1:])
    return got


def test_front_verdicts_and_meets_both(tmp_path):
    ls = []
    for i in range(6):
        # peers: "fast" leads throughput, "short" leads p99 - a trade
        ls.append(line("fast", 2, 200e6 + i, 2000 + i))
        ls.append(line("short", 2, 50e6 + i, 500 + i))
        # "subj": between them - behind fast on ops/s, behind short on p99
        ls.append(line("subj", 2, 100e6 + i, 1000 + i))
        # "both": beats both peers on both metrics
        ls.append(line("both", 2, 300e6 + i, 400 + i))
        # "dom": behind "fast" on ops/s, behind both peers on p99
        ls.append(line("dom", 2, 150e6 + i, 2500 + i))
    r = frontier("--subject", "subj", "--peers", "fast,short", write(tmp_path / "a.jsonl", ls))
    assert r.returncode == 0, r.stderr
    got = rows(r.stdout, 2)
    # Pareto front: "both" dominates everything except nothing beats it; fast/short/subj are dominated by it
    assert {n for n, (front, _) in got.items() if front} == {"both"}, got
    both = got["both"][1]
    assert both[2] == "first" and both[3] == "first" and both[4] == "yes", both
    subj = got["subj"][1]
    assert subj[2].startswith("**behind fast 0.50x") and subj[3].startswith("**behind short 2.00x"), subj
    assert subj[4] == "no"
    dom = got["dom"][1]
    # behind "fast" on ops/s (0.75x); on p99 the worst ratio is named: short's (2502.5 / 502.5), not fast's
    assert "behind fast 0.75x" in dom[2] and "behind short 4.98x" in dom[3], dom
    summary = r.stdout.split("## Summary")[1]
    assert "| 2, 1, 0 | fast | short | no | both |" in summary, summary


def test_front_without_a_dominator_and_ties(tmp_path):
    ls = []
    for i in range(6):
        ls.append(line("fast", 4, 200e6 + i, 2000 + i))
        ls.append(line("short", 4, 50e6 + i, 500 + i))
        # overlapping ranges with fast on ops/s and with short on p99: tied on both -> meets both
        ls.append(line("subj", 4, 200e6 + (5 - i), 500 + (5 - i)))
    r = frontier("--subject", "subj", "--peers", "fast,short", write(tmp_path / "a.jsonl", ls))
    assert r.returncode == 0, r.stderr
    got = rows(r.stdout, 4)
    assert got["subj"][1][2:] == ["tied", "tied", "yes"], got["subj"]
    # nobody beats subj on both medians, and subj beats neither fast on ops/s nor short on p99 strictly
    assert got["subj"][0] and got["fast"][0] and got["short"][0], got
    assert "| 4, 1, 0 | fast | short | yes | subj |" in r.stdout


def test_bad_input(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a mutex-ab line"}\n')
    r = frontier("--subject", "s", "--peers", "p", str(bad))
    assert r.returncode != 0 and "bad.jsonl:1: expected a scripts/mutex-ab --out line" in r.stderr
    good = write(tmp_path / "g.jsonl", [line("a", 2, 1e6, 100)])
    r = frontier("--subject", "a", "--peers", "nobody", good)
    assert r.returncode != 0 and "no variant 'nobody'" in r.stderr and "have: a" in r.stderr
    r = frontier("--subject", "zed", "--peers", "a", good)
    assert r.returncode != 0 and "--subject: no variant 'zed'" in r.stderr
    # one peer of two absent: said in the output, the other still judged
    two = write(tmp_path / "two.jsonl", [line("a", 2, 1e6, 100), line("b", 2, 2e6, 100)])
    r = frontier("--subject", "a", "--peers", "b,gone", two)
    assert r.returncode == 0 and "Peers named but not in these files: gone." in r.stdout, r.stderr
    r = frontier("--subject", "a", "--peers", "a", str(tmp_path / "missing.jsonl"))
    assert r.returncode != 0 and "missing.jsonl" in r.stderr
