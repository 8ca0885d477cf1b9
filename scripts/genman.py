#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates locklab's manual pages from the sources they document, at build time (stdlib only).

    genman.py headers --out DIR --version V [--date D] HEADER...
        man3/<family>.3 for each public header (lk_mutex.3 from mutex.h, ...), a man3/<function>.3
        symlink for every lk_* function declared or defined there, and man7/locklab.7, the overview.
    genman.py bench --out DIR --version V [--date D] --driver PATH --source lab/main.c
        man1/locklab-bench.1 from the driver's own `--help` and `describe` output and the top
        comment of its source.
    genman.py cli --out DIR --version V [--date D] --python-dir python
        man1/locklab.1 from the `locklab` command's argparse parsers, captured by running its main()
        with argparse's parse step replaced (nothing is executed past parsing); the parser of each
        `bench WORKLOAD` is built the same way (needs LOCKLAB_BENCH, or a built driver).

Section 3 comes from the headers' comments, which already follow one layout (liburcu's habit: every
prototype states its ordering and errors): the header's top comment is the page's DESCRIPTION (its
first line, "locklab/x.h - summary", the NAME line); a comment directly above a run of declarations
(no blank line between them) documents that run; a comment at the end of a declaration's line
documents that declaration. Indented comment lines (diagrams, tables) are set without filling.
Functions whose names end in "_" are internal helpers of inline code and get no page. A header added
to include/locklab/ gets its page with no change here (its family name: lk_ + the file name, unless
FAMILY says otherwise).
"""

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

MANUAL = "locklab Manual"
# page (family) name per header, where it is not "lk_" + the header's stem
FAMILY = {"relax.h": "lk_cpu_relax", "version.h": "lk_version", "qspinlock.h": "lk_qspinlock"}
# headers that are not a family page of their own
NOT_A_FAMILY = {"locklab.h", "atomic-internal.h"}
DOCS = {  # design notes per family (docs/ in the source tree), for SEE ALSO
    "lk_mutex": "docs/mutex.md", "lk_cond": "docs/cond.md", "lk_park": "docs/park.md",
    "lk_lockref": "docs/lockref.md", "lk_refcount": "docs/refcount.md",
}


# ---- roff ----------------------------------------------------------------------------------------

def esc(text):
    """Text for a roff line: backslashes escaped, non-ASCII as \\[uXXXX], no leading control char."""
    out = []
    for ch in text.replace("\\", "\\e"):
        out.append(ch if ord(ch) < 128 else "\\[u%04X]" % ord(ch))
    s = "".join(out)
    if s[:1] in (".", "'"):
        s = "\\&" + s
    return s


def opt(text):
    """An option or command name: hyphens as \\- (so they are not hyphenation points)."""
    return esc(text).replace("-", "\\-")


def th(name, section, version, date):
    # no hyphenation, ragged right: identifiers and options stay whole and copyable
    return [f'.TH "{name.upper()}" {section} "{date}" "locklab {version}" "{MANUAL}"', ".nh", ".ad l"]


def paragraphs_roff(paras):
    """Comment paragraphs (lists of lines) as roff: filled text, indented lines without filling."""
    out = []
    for para in paras:
        out.append(".PP")
        nofill = False
        for line in para:
            pre = line[:1] in ("\t", " ")
            if pre and not nofill:
                out += [".nf", ".RS 2"]
                nofill = True
            elif not pre and nofill:
                out += [".RE", ".fi"]
                nofill = False
            out.append(esc(line.expandtabs(8).rstrip() if pre else line.strip()))
        if nofill:
            out += [".RE", ".fi"]
    return out


def write_page(path, lines):
    # a paragraph macro right after a heading or an indent start is redundant (mandoc warns)
    tidy = []
    for ln in lines:
        if ln == ".PP" and tidy and tidy[-1].split(" ")[0] in (".SH", ".SS", ".RS", ".PP", ".TP"):
            continue
        tidy.append(ln)
    lines = tidy
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


# ---- C headers -----------------------------------------------------------------------------------

def comment_lines(block):
    """The text lines of a /* ... */ block, without the comment markers and the ' * ' margin."""
    body = block[2:-2]
    lines = body.split("\n")
    out = []
    for ln in lines:
        s = ln.rstrip()
        m = re.match(r"^\s*\*(?: ?)(.*)$", s)
        if m and not s.strip().startswith("*/"):
            s = m.group(1)
        else:
            s = s.strip()
        out.append(s)
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def split_paragraphs(lines):
    paras, cur = [], []
    for ln in lines:
        if ln.strip():
            cur.append(ln)
        elif cur:
            paras.append(cur)
            cur = []
    if cur:
        paras.append(cur)
    return paras


class Item:
    """One top-level thing in a header: a comment, a declaration or definition, a macro, a blank."""

    def __init__(self, kind, text, line, end_line=None):
        self.kind, self.text, self.line = kind, text, line
        self.end_line = end_line if end_line is not None else line
        self.trailing = None	# a comment on the declaration's last line


def scan(text):
    """Top-level items of a C header: comments, blank lines, #defines, declarations (function bodies
    reduced to "{ ... }"). A comment on the line where a declaration ends becomes its .trailing; comments
    inside a struct or enum stay in its text. Code inside `#ifdef __cplusplus` blocks is skipped;
    other conditionals are read as if every branch were taken (callers keep a name's first definition)."""
    items = []
    i, n, line = 0, len(text), 1
    code, code_line, depth, skip = [], None, 0, 0
    in_function = False	# inside a function body (depth >= 1): nothing is kept
    cond_stack = []	# per open #if: does it skip (a __cplusplus block)?

    def pending():
        return "".join(code).strip() != ""

    def flush_code(end):
        nonlocal code, code_line
        s = "".join(code).strip()
        if s:
            items.append(Item("decl", s, code_line, end))
        code, code_line = [], None

    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.index("*/", i) + 2
            block = text[i:j]
            if not skip and not in_function:
                if depth > 0 or pending():
                    code.append(block)
                elif items and items[-1].kind in ("decl", "define") and items[-1].end_line == line:
                    items[-1].trailing = block
                else:
                    items.append(Item("comment", block, line, line + block.count("\n")))
            line += block.count("\n")
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "#" and (i == 0 or text[i - 1] == "\n"):
            k = i
            while True:
                k = text.find("\n", k)
                if k < 0:
                    k = n
                    break
                if text[k - 1] != "\\":
                    break
                k += 1
            directive = text[i:k]
            d = re.sub(r"\s+", " ", directive.replace("\\\n", " ")).strip()
            if re.match(r"#\s*if", d):
                cplus = "__cplusplus" in d and not re.match(r"#\s*ifndef", d)
                cond_stack.append(cplus)
                skip += cplus
            elif re.match(r"#\s*(else|elif)", d):
                if cond_stack and cond_stack[-1]:
                    skip -= 1
                    cond_stack[-1] = False
            elif re.match(r"#\s*endif", d):
                if cond_stack and cond_stack.pop():
                    skip -= 1
            elif depth == 0 and not skip and re.match(r"#\s*define ", d):
                m = re.match(r"(.*?)\s*(/\*.*\*/)\s*$", directive, re.S)
                it = Item("define", (m.group(1) if m else directive).strip(), line,
                          line + directive.count("\n"))
                if m:
                    it.trailing = m.group(2)
                items.append(it)
            line += directive.count("\n")
            i = k
            continue
        if c == "\n":
            if depth == 0 and not skip and not pending():
                k = text.find("\n", i + 1)
                if not text[i + 1:k if k >= 0 else n].strip():
                    items.append(Item("blank", "", line + 1))
            line += 1
            if code_line is not None:
                code.append("\n")
            i += 1
            continue
        if c in "\"'":
            j = i + 1
            while text[j] != c:
                j += 2 if text[j] == "\\" else 1
            if not skip and not in_function:
                code.append(text[i:j + 1])
            i = j + 1
            continue
        if skip:
            i += 1
            continue
        if c == "{":
            if depth == 0 and re.search(r"\)\s*$", "".join(code)):
                in_function = True
                code.append(" { ... }")
            elif not in_function:
                code.append("{")
            depth += 1
            i += 1
            continue
        if c == "}":
            depth -= 1
            if in_function:
                if depth == 0:
                    in_function = False
                    flush_code(line)
            else:
                code.append("}")
            i += 1
            continue
        if in_function:
            i += 1
            continue
        if code_line is None and not c.isspace():
            code_line = line
        if code_line is not None:
            code.append(c)
        if c == ";" and depth == 0:
            flush_code(line)
        i += 1
    return items


FUNC_RE = re.compile(r"\b(lk_[A-Za-z0-9_]+)\s*\(")


def decl_data(decl):
    """The lk_* variable an extern declaration declares (None for anything else)."""
    s = re.sub(r"\s+", " ", decl).strip()
    m = re.match(r"extern\b[^(;]*?\b(lk_\w+)\s*(\[[^]]*\])?\s*(__attribute__\s*\(\(.*\)\))?\s*;$", s)
    return m.group(1) if m else None


def decl_function(decl):
    """The lk_* function a declaration declares or defines (None for types and data)."""
    s = re.sub(r"\s+", " ", decl)
    if s.startswith(("typedef", "struct ", "enum ", "union ")) and "(" not in s.split("{")[0]:
        return None
    if s.startswith("typedef"):
        return None
    m = FUNC_RE.search(s)
    if not m:
        return None
    # a function pointer variable ("(*name)(") is not a function
    if re.search(r"\(\s*\*\s*" + re.escape(m.group(1)), s):
        return None
    return m.group(1)


def c_view(code):
    """Code as C sees it: LK_ATOMIC(T), the C/C++ compatibility macro, is C's _Atomic(T)."""
    return re.sub(r"\bLK_ATOMIC\(", "_Atomic(", code)


def prototype(decl):
    """A declaration as a one-statement prototype: inline bodies dropped, whitespace normalised."""
    s = re.sub(r"\s*\{ \.\.\. \}", ";", decl)
    s = c_view(s)
    s = re.sub(r"^\s*static\s+inline\s+", "", s)
    s = re.sub(r"\s+", " ", s).strip()
    s = s.replace("( ", "(").replace(" )", ")")
    return s


def wrap_prototype(proto, width=78):
    """A long prototype broken after commas, continuation lines aligned after its '('."""
    if len(proto) <= width or "(" not in proto:
        return [proto]
    indent = " " * (proto.index("(") + 1)
    lines, cur, depth = [], "", 0
    for ch in proto:
        cur += ch
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 1 and len(cur) > 0:
            lines.append(cur)
            cur = ""
    lines.append(cur)
    out, line = [], ""
    for part in lines:
        piece = part if not line else part.lstrip()
        if line and len(line) + 1 + len(piece) > width:
            out.append(line)
            line = indent + piece
        else:
            line = (line + " " + piece) if line else piece
    out.append(line)
    return out


def bold_lines(proto):
    return ["\\fB" + esc(l) + "\\fP" for l in wrap_prototype(proto)]


def parse_header(path):
    text = path.read_text()
    items = scan(text)
    comments = [it for it in items if it.kind == "comment"]
    top = None
    for it in comments:
        lines = comment_lines(it.text)
        if lines and lines[0].startswith("locklab/"):
            top = it
            break
    if top is None:
        raise SystemExit(f"genman: {path}: no top comment starting 'locklab/{path.name} - '")
    top_lines = comment_lines(top.text)
    paras = split_paragraphs(top_lines)
    first = " ".join(l.strip() for l in paras[0])
    m = re.match(r"locklab/\S+\s+-\s+(.*)$", first)
    if not m:
        raise SystemExit(f"genman: {path}: the top comment must start 'locklab/{path.name} - summary'")
    summary = m.group(1).rstrip(".:")
    summary = re.sub(r"^lk_\w+:\s*", "", summary)

    # groups: a comment, then declarations with no blank line between them
    groups = []	# (comment_lines or None, [items])
    cur = None
    after_top = False
    for it in items:
        if it is top:
            after_top = True
            continue
        if not after_top:
            continue
        if it.kind == "blank":
            cur = None
        elif it.kind == "comment":
            cur = [comment_lines(it.text), []]
            groups.append(cur)
        else:
            if cur is None:
                cur = [None, []]
                groups.append(cur)
            cur[1].append(it)
    # the DESCRIPTION opens with the first paragraph itself (minus "locklab/x.h - ")
    lead = [re.sub(r"^locklab/\S+\s+-\s+", "", paras[0][0])] + paras[0][1:]
    if re.match(r"[a-z]+\b(?![_(])", lead[0]):	# a word, not an identifier: capitalise it
        lead[0] = lead[0][:1].upper() + lead[0][1:]
    return {"path": path, "summary": summary, "description": [lead] + paras[1:], "groups": groups}


def family_of(path):
    return FAMILY.get(path.name, "lk_" + path.stem)


def define_name(d):
    m = re.match(r"#\s*define\s+(\w+)", d)
    return m.group(1) if m else None


def header_page(h, families, version, date):
    path = h["path"]
    fam = family_of(path)
    funcs, seen, data = [], set(), []
    func_groups, type_groups = [], []
    seen_defines = {}
    for comment, members in h["groups"]:
        fs = []
        others = []
        for it in members:
            if it.kind == "define":
                name = define_name(it.text)
                if not name or name.startswith("LOCKLAB_") or name.endswith("_"):
                    continue
                seen_defines[name] = seen_defines.get(name, 0) + 1
                if seen_defines[name] > 1:
                    continue
                others.append(it)
                continue
            f = decl_function(it.text)
            if f is None:
                v = decl_data(it.text)
                if v and not v.endswith("_"):
                    data.append(v)	# exported data: a link to the family page, not in NAME
                if it.text.strip() in ("", ";"):
                    continue
                if re.match(r"^(struct|union|enum)\s+\w+\s*;$", it.text.strip()):
                    continue	# forward declaration
                others.append(it)
                continue
            if f.endswith("_") or f in seen:
                continue
            seen.add(f)
            funcs.append(f)
            fs.append(it)
        if fs:
            func_groups.append((comment, fs))
        if others:
            type_groups.append((comment, others))
    # a name defined in several conditional branches (per architecture) shows that it varies
    varies = {n for n, k in seen_defines.items() if k > 1}

    lines = th(fam, 3, version, date)
    lines += [".SH NAME", esc(", ".join(funcs) if funcs else fam) + " \\- " + esc(h["summary"])]
    lines += [".SH LIBRARY",
              "locklab (\\fIliblocklab\\fP, \\fB\\-llocklab\\fP; \\fBpkg\\-config \\-\\-cflags \\-\\-libs locklab\\fP,"
              " or CMake \\fBfind_package(locklab)\\fP and the target \\fBlocklab::locklab\\fP)"]
    lines += [".SH SYNOPSIS", ".nf", f"\\fB#include <locklab/{path.name}>\\fP"]
    for comment, fs in func_groups:
        lines.append("")
        for it in fs:
            lines += bold_lines(prototype(it.text))
    lines.append(".fi")
    lines.append(".SH DESCRIPTION")
    lines += paragraphs_roff(h["description"])
    if func_groups:
        lines.append(".SH FUNCTIONS")
        for comment, fs in func_groups:
            lines += [".PP", ".nf"]
            for it in fs:
                lines += bold_lines(prototype(it.text))
            lines.append(".fi")
            text = []
            if comment:
                text += split_paragraphs(comment)
            for it in fs:
                if it.trailing:
                    note = " ".join(l.strip() for l in comment_lines(it.trailing))
                    name = decl_function(it.text)
                    text.append([f"{name}(): {note}" if len(fs) > 1 else note])
            if text:
                lines.append(".RS")
                lines += paragraphs_roff(text)[1:] if text else []
                lines.append(".RE")
    if type_groups:
        lines.append(".SH TYPES AND CONSTANTS")
        for comment, others in type_groups:
            if comment:
                lines += paragraphs_roff(split_paragraphs(comment))
            lines += [".PP", ".nf", ".RS 2"]
            for it in others:
                code = c_view(it.text)
                if it.kind == "define" and define_name(code) in varies:
                    code = f"#define {define_name(code)} ...    /* depends on the architecture */"
                elif it.trailing:
                    code += "\t" + re.sub(r"\s+", " ", it.trailing)
                for ln in code.split("\n"):
                    lines.append(esc(ln.rstrip().expandtabs(8)))
            lines += [".RE", ".fi"]
    lines += [".SH SEE ALSO"]
    see = [f"\\fB{opt(f)}\\fP(3)" for f in sorted(families) if f != fam]
    see.append("\\fBlocklab\\fP(7)")
    lines.append(",\n".join(see))
    if fam in DOCS:
        lines += [".PP", f"The design notes: \\fI{DOCS[fam]}\\fP in the locklab source tree."]
    return fam, funcs + data, lines


def overview_page(umbrella, pages, version, date):
    lines = th("locklab", 7, version, date)
    lines += [".SH NAME", "locklab \\- a userspace locking library for Linux"]
    lines += [".SH SYNOPSIS", ".nf", "\\fB#include <locklab/locklab.h>\\fP         (C11)",
              "\\fB#include <locklab/locklab.hpp>\\fP       (C++17)", "",
              "\\fBcc app.c $(pkg\\-config \\-\\-cflags \\-\\-libs locklab)\\fP",
              "CMake: \\fBfind_package(locklab CONFIG REQUIRED)\\fP, target \\fBlocklab::locklab\\fP"
              " (shared) or \\fBlocklab::locklab_static\\fP", ".fi"]
    lines += [".SH DESCRIPTION"]
    if umbrella:
        lines += [".PP", "<locklab/locklab.h>: " + esc(umbrella["summary"]) + "."]
        lines += paragraphs_roff(umbrella["description"][1:])
    lines += [".PP", "One header and one manual page per primitive:"]
    for fam, hdr, summary in sorted(pages):
        lines += [".TP", f"\\fB{opt(fam)}\\fP(3)", f"<locklab/{hdr}>: " + esc(summary)]
    lines += [".PP", "The C++ header wraps the mutex, the condition variable and the spinlocks as "
              "standard-library lock types (\\fIdocs/cxx.md\\fP in the source tree)."]
    lines += [".SH SEE ALSO", ",\n".join([f"\\fB{opt(f)}\\fP(3)" for f, _, _ in sorted(pages)] +
                                          ["\\fBlocklab\\fP(1)", "\\fBlocklab\\-bench\\fP(1)"])]
    return lines


def clean(d, pattern):
    if d.is_dir():
        for p in d.glob(pattern):
            if p.is_symlink() or p.is_file():
                p.unlink()


def cmd_headers(ns):
    out = Path(ns.out)
    clean(out / "man3", "*.3")
    clean(out / "man7", "*.7")
    parsed = {Path(h).name: parse_header(Path(h)) for h in sorted(ns.headers)}
    families = [family_of(Path(n)) for n in parsed if n not in NOT_A_FAMILY]
    links, pages = {}, []
    for name, h in parsed.items():
        if name in NOT_A_FAMILY:
            continue
        fam, funcs, lines = header_page(h, families, ns.version, ns.date)
        write_page(out / "man3" / f"{fam}.3", lines)
        pages.append((fam, name, h["summary"]))
        for f in funcs:
            if f != fam:
                if f in links:
                    raise SystemExit(f"genman: {f} is declared in two headers")
                links[f] = fam
    for f, fam in sorted(links.items()):
        (out / "man3" / f"{f}.3").symlink_to(f"{fam}.3")
    write_page(out / "man7" / "locklab.7", overview_page(parsed.get("locklab.h"), pages, ns.version, ns.date))
    print(f"genman: {len(pages)} section 3 pages, {len(links)} links, locklab(7)")


# ---- section 1: locklab-bench --------------------------------------------------------------------

def top_comment_of_source(path):
    """The lines of a source file's first comment that is not its SPDX line."""
    for m in re.finditer(r"/\*.*?\*/", Path(path).read_text(), re.S):
        if "SPDX-License-Identifier" not in m.group(0):
            return comment_lines(m.group(0))
    return []


def num(v):
    return str(int(v)) if isinstance(v, (int, float)) and float(v).is_integer() else str(v)


def cmd_bench(ns):
    drv = ns.driver
    helptext = subprocess.run([drv, "--help"], capture_output=True, text=True, check=True).stdout
    desc = json.loads(subprocess.run([drv, "describe"], capture_output=True, text=True, check=True).stdout)
    src = split_paragraphs(top_comment_of_source(ns.source))
    first = " ".join(l.strip() for l in src[0]) if src else ""
    m = re.match(r"\S+\s+-\s+(.*)$", first)
    summary = (m.group(1) if m else "the contention lab's measuring driver").rstrip(".")
    summary = re.sub(r"^locklab-bench,\s*", "", summary)
    usage = [l for l in helptext.splitlines() if l.strip() and not l.startswith("workloads:")]
    lines = th("locklab-bench", 1, ns.version, ns.date)
    lines += [".SH NAME", "locklab\\-bench \\- " + esc(summary), ".SH SYNOPSIS", ".nf"]
    for l in usage:
        lines.append(opt(re.sub(r"^(usage:\s*|\s+)", "", l)))
    lines += [".fi", ".SH DESCRIPTION"]
    lines += paragraphs_roff(src[1:])
    lines += [".SH WORKLOADS",
              "Each workload's parameters, as \\fBlocklab\\-bench describe\\fP reports them. Each one is "
              "given as \\fB\\-\\-name\\fP \\fIvalue\\fP or \\fB\\-\\-name=\\fP\\fIvalue\\fP; one run takes "
              "one value per parameter (\\fBlocklab\\fP(1) sweeps comma lists)."]
    for wl in desc["workloads"]:
        lines += [".SS " + opt(wl["name"]), esc(wl["help"]) + ".",
                  ".br", "Primary metric: \\fB" + esc(wl["metric"]) + "\\fP (" +
                  ("higher" if wl["higher_is_better"] else "lower") + " is better)."]
        for p in wl["params"]:
            facts = [p["type"]]
            if p.get("min") is not None:
                facts.append(f"{num(p['min'])}..{num(p['max'])}")
            if p.get("choices"):
                facts.append(("an algorithm of family " if p["type"] == "alg" else "one of ") +
                             p["choices"].replace(",", ", "))
            if p.get("default") is not None:
                facts.append("default " + p["default"])
            lines += [".TP", f"\\fB\\-\\-{opt(p['name'])}\\fP \\fIvalue\\fP",
                      esc(p["help"]) + " (" + esc("; ".join(facts)) + ")."]
    lines += [".SH SEE ALSO", "\\fBlocklab\\fP(1), \\fBlocklab\\fP(7), \\fBlk_mutex\\fP(3)"]
    out = Path(ns.out) / "man1" / "locklab-bench.1"
    write_page(out, lines)
    print(f"genman: {out} ({len(desc['workloads'])} workloads)")


# ---- section 1: locklab (the Python CLI) ---------------------------------------------------------

class _Captured(BaseException):
    def __init__(self, parser):
        super().__init__()
        self.parser = parser


def capture_parser(main, argv):
    """The argparse parser that main(argv) parses with first; nothing past parsing runs."""
    saved = argparse.ArgumentParser.parse_known_args

    def fake(self, args=None, namespace=None):
        raise _Captured(self)

    argparse.ArgumentParser.parse_known_args = fake
    try:
        main(argv)
    except _Captured as c:
        return c.parser
    finally:
        argparse.ArgumentParser.parse_known_args = saved
    raise SystemExit(f"genman: locklab {' '.join(argv)} did not parse any arguments")


def actions_roff(parser):
    fmt = parser._get_formatter()
    out = []
    for a in parser._actions:
        if isinstance(a, argparse._HelpAction) or a.help == argparse.SUPPRESS:
            continue
        if isinstance(a, argparse._SubParsersAction):
            continue
        if not a.option_strings and (a.nargs == argparse.REMAINDER or not a.help):
            continue
        inv = fmt._format_action_invocation(a)
        helptext = fmt._expand_help(a) if a.help else ""
        out += [".TP", "\\fB" + opt(inv) + "\\fP", esc(helptext)]
    return out


def synopsis_of(parser):
    """The parser's usage, as argparse wraps it, without the "usage: " prefix."""
    lines = parser.format_usage().rstrip().split("\n")
    prefix = "usage: "
    out = [lines[0][len(prefix):] if lines[0].startswith(prefix) else lines[0]]
    out += [l[len(prefix):] if l.startswith(" " * len(prefix)) else l for l in lines[1:]]
    return [opt(l) for l in out]


def cmd_cli(ns):
    os.environ["COLUMNS"] = "80"	# argparse wraps usage lines to the terminal width it finds
    sys.path.insert(0, str(Path(ns.python_dir).resolve()))
    from locklab import cli  # noqa: E402  (the CLI of this source tree, not an installed one)

    top = capture_parser(cli.main, [])
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    helps = {ca.dest: ca.help for ca in sub._choices_actions}
    desc = top.description or ""
    first = re.split(r"(?<=\.)\s", desc, maxsplit=1)[0].rstrip(".")
    if first[:1].isupper() and not first[1:2].isupper():
        first = first[0].lower() + first[1:]
    lines = th("locklab", 1, ns.version, ns.date)
    lines += [".SH NAME", "locklab \\- " + esc(first), ".SH SYNOPSIS", ".nf"]
    lines += synopsis_of(top)
    for name in sub.choices:
        lines.append("\\fBlocklab " + opt(name) + "\\fP ...")
    lines += [".fi", ".SH DESCRIPTION", esc(desc)]
    if top.epilog:
        lines += [".PP", esc(top.epilog)]
    opts = actions_roff(top)
    if opts:
        lines += [".SH OPTIONS"] + opts
    lines += [".SH COMMANDS"]
    bench_parsers = []
    for name, p in sub.choices.items():
        lines += [".SS locklab " + opt(name), esc(helps.get(name) or "") + ".", ".PP", ".nf"]
        lines += synopsis_of(p)
        lines += [".fi"]
        if p.description:
            lines += [".PP", esc(p.description)]
        lines += actions_roff(p)
        if p.epilog:
            lines += [".PP", esc(p.epilog)]
        if name == "bench":
            bench_parsers = workload_parsers(cli)
            lines += [".PP", "\\fBlocklab bench\\fP \\fIWORKLOAD\\fP takes the options of the workload "
                      "(see \\fBWORKLOADS\\fP below), each a comma list to sweep where noted."]
    if bench_parsers:
        lines += [".SH WORKLOADS"]
        for wl, p in bench_parsers:
            lines += [".SS locklab bench " + opt(wl), ".nf"] + synopsis_of(p) + [".fi"]
            if p.description:
                lines += [".PP", esc(p.description) + "."]
            lines += actions_roff(p)
            if p.epilog:
                lines += [".PP", esc(p.epilog)]
    lines += [".SH SEE ALSO", "\\fBlocklab\\-bench\\fP(1), \\fBlocklab\\fP(7)"]
    out = Path(ns.out) / "man1" / "locklab.1"
    write_page(out, lines)
    print(f"genman: {out} ({len(sub.choices)} commands, {len(bench_parsers)} workloads)")


def workload_parsers(cli):
    drv = os.environ.get("LOCKLAB_BENCH")
    if not drv:
        raise SystemExit("genman: LOCKLAB_BENCH must name the built locklab-bench (workload options)")
    desc = json.loads(subprocess.run([drv, "describe"], capture_output=True, text=True, check=True).stdout)
    return [(wl["name"], capture_parser(cli.main, ["bench", wl["name"], "--help"]))
            for wl in desc["workloads"]]


def main():
    ap = argparse.ArgumentParser(description="generate locklab's manual pages")
    sub = ap.add_subparsers(dest="what", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", required=True, help="the man/ directory (man1, man3, man7 below it)")
    common.add_argument("--version", required=True, help="locklab's version, for the page footer")
    common.add_argument("--date", default="", help="the pages' date (YYYY-MM-DD)")
    ph = sub.add_parser("headers", parents=[common], help="section 3 and 7 from the public headers")
    ph.add_argument("headers", nargs="+")
    pb = sub.add_parser("bench", parents=[common], help="locklab-bench(1) from the driver")
    pb.add_argument("--driver", required=True)
    pb.add_argument("--source", required=True, help="lab/main.c (its top comment)")
    pc = sub.add_parser("cli", parents=[common], help="locklab(1) from the CLI's parsers")
    pc.add_argument("--python-dir", required=True)
    ns = ap.parse_args()
    {"headers": cmd_headers, "bench": cmd_bench, "cli": cmd_cli}[ns.what](ns)


if __name__ == "__main__":
    main()
