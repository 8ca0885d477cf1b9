#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Manual page test: the pages the build generated (scripts/genman.py) cover everything, render
cleanly and are installed.

  - every lk_* symbol the shared library exports (nm -D) has a section 3 page (its own name, a link
    to its family's page), and so has every lk_* function declared or defined in a public header
    (the inline ones are not exported; names ending in "_" are internal helpers);
  - locklab-bench(1) documents every workload and every option the driver's own `WORKLOAD --help`
    prints; locklab(1) documents every command and every workload;
  - every page renders with `groff -man -ww` (all warnings on) without a warning, passes
    `mandoc -Tlint -W warning` when mandoc is installed, and `man -l` renders it when man is;
  - `cmake --install` puts all of them under share/man, where `man -M` and MANPATH find them.
usage: man-pages.py BUILD_DIR SOURCE_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

build, source = Path(sys.argv[1]), Path(sys.argv[2])
man = build / "man"
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def page_ok(path):
    return path.exists() and path.resolve().is_file()


# ---- coverage: exported symbols and header functions --------------------------------------------
so = next(iter(sorted(build.glob("liblocklab.so.*.*"))), None)
if so is None:
    fail(f"no liblocklab.so.*.* in {build}")
    exported = set()
else:
    nm = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True, text=True, check=True)
    exported = {ln.split()[-1].split("@")[0] for ln in nm.stdout.splitlines()
                if len(ln.split()) == 3 and ln.split()[-1].startswith("lk_")}
    if len(exported) < 40:
        fail(f"only {len(exported)} lk_* symbols exported by {so}: the check would prove little")

declared = set()
for h in sorted((source / "include" / "locklab").glob("*.h")):
    in_comment = False
    for line in h.read_text().splitlines():
        if in_comment:
            in_comment = "*/" not in line
            continue
        if line.lstrip().startswith("/*"):
            in_comment = "*/" not in line
            continue
        # declarations and definitions start in column 0; calls inside bodies are indented
        if line[:1].isalpha() and not line.startswith(("typedef", "#")):
            for name in re.findall(r"\b(lk_[a-z0-9_]+)\s*\(", line.split("/*")[0]):
                if not name.endswith("_") and not re.search(r"\(\s*\*\s*" + name, line):
                    declared.add(name)
                break	# the first lk_ name followed by '(' is the function; the rest are parameters

missing = sorted(n for n in exported | declared if not page_ok(man / "man3" / f"{n}.3"))
for n in missing:
    fail(f"{n}: no man3/{n}.3 ({'exported' if n in exported else 'declared in a header'})")
print(f"man-pages: {len(exported)} exported symbols, {len(declared)} header functions, "
      f"{len(missing)} without a page")

# ---- section 1 against the programs --------------------------------------------------------------
bench = build / "locklab-bench"
bench_page = man / "man1" / "locklab-bench.1"
cli_page = man / "man1" / "locklab.1"
for p in (bench_page, cli_page, man / "man7" / "locklab.7"):
    if not p.is_file():
        fail(f"{p} was not generated" + (" (configure found no Python that imports the CLI: run "
                                         "`make setup`)" if p == cli_page else ""))
if bench_page.is_file() and cli_page.is_file():
    import json
    desc = json.loads(subprocess.run([str(bench), "describe"], capture_output=True, text=True,
                                     check=True).stdout)
    btext, ctext = bench_page.read_text(), cli_page.read_text()
    for wl in desc["workloads"]:
        name = wl["name"].replace("-", "\\-")
        if f".SS {name}\n" not in btext:
            fail(f"locklab-bench.1 has no section for workload {wl['name']}")
        if f".SS locklab bench {name}\n" not in ctext:
            fail(f"locklab.1 has no section for `locklab bench {wl['name']}`")
        helptext = subprocess.run([str(bench), wl["name"], "--help"], capture_output=True,
                                  text=True).stdout
        for option in sorted(set(re.findall(r"--[a-z][a-z0-9-]*", helptext))):
            if option.replace("-", "\\-") not in btext:
                fail(f"locklab-bench.1: `locklab-bench {wl['name']} --help` lists {option}, the page does not")
    top_usage = subprocess.run([str(bench), "--help"], capture_output=True, text=True).stdout
    for cmd in re.findall(r"locklab-bench (\w+)", top_usage):
        if cmd != "WORKLOAD" and f"locklab\\-bench {cmd}" not in btext:
            fail(f"locklab-bench.1 does not show `locklab-bench {cmd}` from --help")
    if len(re.findall(r"^\.SS locklab [a-z]+$", ctext, re.M)) < 5:
        fail("locklab.1 documents fewer than 5 commands")

# ---- rendering -----------------------------------------------------------------------------------
pages = sorted(p for p in man.rglob("*.[137]") if not p.is_symlink())
mandoc = shutil.which("mandoc")
mancmd = shutil.which("man")
for p in pages:
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(p)], capture_output=True, text=True)
    if r.returncode != 0 or r.stderr.strip():
        fail(f"groff -man -ww {p.name}: {r.stderr.strip() or 'exit %d' % r.returncode}")
    if mandoc:
        r = subprocess.run([mandoc, "-Tlint", "-W", "warning", str(p)], capture_output=True, text=True)
        if r.stdout.strip() or r.stderr.strip():
            fail(f"mandoc -Tlint {p.name}: {(r.stdout + r.stderr).strip()}")
    if mancmd:
        r = subprocess.run([mancmd, "-l", str(p)], capture_output=True, text=True,
                           env=dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="0"))
        if r.returncode != 0 or len(r.stdout) < 200 or r.stderr.strip():
            fail(f"man -l {p.name}: exit {r.returncode}, {len(r.stdout)} bytes, {r.stderr.strip()}")
print(f"man-pages: {len(pages)} pages rendered with groff -ww" + (", mandoc -Tlint" if mandoc else "")
      + (", man -l" if mancmd else ""))
if len(pages) < 12:
    fail(f"only {len(pages)} pages generated")

# ---- installed -----------------------------------------------------------------------------------
with tempfile.TemporaryDirectory() as tmp:
    subprocess.run(["cmake", "--install", str(build), "--prefix", tmp], check=True, capture_output=True)
    mandir = Path(tmp) / "share" / "man"
    generated = sorted(str(p.relative_to(man)) for p in man.rglob("*.[137]"))
    for rel in generated:
        if not page_ok(mandir / rel):
            fail(f"{rel} is not installed under {mandir}")
    if mancmd:
        for sect, name in (("3", "lk_mutex_lock"), ("3", "lk_cond_timedwait"), ("1", "locklab-bench"),
                           ("7", "locklab")):
            r = subprocess.run([mancmd, "-M", str(mandir), "-w", sect, name], capture_output=True, text=True)
            if r.returncode != 0 or not r.stdout.strip().startswith(str(mandir)):
                fail(f"man -M {mandir} -w {sect} {name}: {r.stdout.strip() or r.stderr.strip()}")
            # as the README says: MANPATH=<prefix>/share/man: (the empty part keeps the system pages)
            r = subprocess.run([mancmd, "-w", sect, name], capture_output=True, text=True,
                               env=dict(os.environ, MANPATH=f"{mandir}:"))
            if r.returncode != 0 or not r.stdout.strip().startswith(str(mandir)):
                fail(f"MANPATH={mandir}: man -w {sect} {name}: {r.stdout.strip() or r.stderr.strip()}")
    print(f"man-pages: {len(generated)} pages and links installed under share/man")

if failures:
    print(f"man-pages: {len(failures)} failure(s)", file=sys.stderr)
    sys.exit(1)
print("man-pages: ok")
