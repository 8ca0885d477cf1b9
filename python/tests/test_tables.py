"""Terminal tables fit the console: at 80 columns (and at 50) nothing is cut or wrapped mid-number;
the marks and abbreviations are explained under the tables; `locklab show` re-prints a saved file."""

import io
import re

import pytest
from rich.console import Console

from locklab import stats as st
from locklab import tables

LOCKS = ["lk_mutex", "glibc_normal", "glibc_adaptive", "rust_parking_lot", "absl_mutex"]


def doc_with(locks=LOCKS, base="glibc_normal"):
    cells = []
    for t in (10, 256):
        stats = {lk: st.summarize([1234567.0 * (i + 1) * (1 + k / 50) for k in range(5)])
                 for i, lk in enumerate(locks)}
        comps = [{"lock": lk, "baseline": base,
                  **st.compare_samples(stats[lk]["values"], stats[base]["values"])}
                 for lk in locks if lk != base]
        w, tied = st.winner(stats)
        cells.append({"params": {"threads": t, "load": 1}, "stats": stats, "comparisons": comps,
                      "winner": w, "winner_tied_with": tied, "busy_runs": 0, "judged_runs": 25})
    return {"schema": "locklab-results/1", "workload": "mutex", "metric": "ops_per_sec",
            "higher_is_better": True, "baseline": base, "locks": list(locks),
            "axes": {"threads": [10, 256]}, "fixed": {"load": 1}, "runs": [], "cells": cells}


def render(doc, width):
    con = Console(width=width, file=io.StringIO(), highlight=False, color_system=None)
    tables.print_cells(doc, con)
    return con.file.getvalue()


@pytest.mark.parametrize("width,layout", [(132, "wide"), (80, "abbrev"), (50, "long")])
def test_tables_fit_and_keep_numbers_whole(width, layout):
    doc = doc_with()
    out = render(doc, width)
    con = Console(width=width, file=io.StringIO())
    assert tables.choose_layout(con, doc, doc["cells"][0]) == layout
    assert "…" not in out
    for line in out.splitlines():
        assert len(line) <= width, line
    # every median appears whole, in the layout's number format
    fmt = tables.fmt_num if layout in ("wide", "long") else tables._short_num
    for cell in doc["cells"]:
        for s in cell["stats"].values():
            assert fmt(s["median"]) in out
    assert "* = the cell's winner (best median); = = tied with the winner" in " ".join(out.split())
    if layout == "abbrev":
        assert re.search(r"locks: glibc_n = glibc_normal, glibc_a = glibc_adaptive, rust_pl =\s+"
                         r"rust_parking_lot, absl_m = absl_mutex", out)


def test_winner_marks():
    doc = doc_with()
    out = render(doc, 160)
    assert re.search(r"│ absl_mutex \* +│", out)  # the best median: the winner


def test_show_reprints_a_saved_file(fake_bench, run_cli, tmp_path):
    rc, out, err = run_cli("bench", "mutex", "--lock", "lk_mutex,glibc_normal", "--threads", "1,2",
                           "--repeat", "4", "--no-progress", "--out", "r.json")
    assert rc == 0, err
    rc2, shown, err2 = run_cli("show", "r.json")
    assert rc2 == 0 and err2 == ""
    assert shown == out.replace("wrote r.json\n", "")
    flat = " ".join(shown.split())
    assert "lk_mutex against every other lock (2 cells;" in flat
    assert "vs glibc_normal faster in 2, tied in 0, slower in 0" in flat
    rc, out, err = run_cli("show", "r.json", "nope.json")
    assert rc == 2 and out == "" and err == "locklab: nope.json: no such file\n"
