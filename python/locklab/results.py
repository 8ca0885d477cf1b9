"""The results file written by `locklab bench --out F` and read by show, compare, report and resume.

    {"schema": "locklab-results/1", "workload": ..., "command": ..., "created": ..., "machine": {...},
     "metric": ..., "higher_is_better": ..., "baseline": ..., "locks": [...],
     "axes": {swept param: [values]}, "fixed": {every other param: value},
     "runs": [run record + {"repeat": r, "host": {...}}], "cells": [{"params", "stats", "comparisons",
     "winner", "winner_tied_with", "busy_runs", "judged_runs"}], "status": "complete" | "interrupted"}

The published JSON Schema is schema/results.schema.json next to this module (shipped with the
package; docs/results-schema.md explains it and how to extend it).  load() reads a file, checks what
the schema cannot say well in words (not JSON, truncated, another schema or a run record), then
validates it against the schema and refuses it with one line naming the field:

    locklab: x.json: malformed results file: at cells[3].stats.lk_mutex.values[2]: expected a number,
    got the string "fast"

Validation uses the `jsonschema` package (Draft 2020-12): the schema is a public document that users
validate with their own tools, so locklab checks it with a complete, standard implementation rather
than a home-made subset that could quietly disagree with theirs.
"""

import json
import os
from functools import lru_cache
from pathlib import Path

from .errors import FileError

SCHEMA = "locklab-results/1"
SCHEMA_RUN = "locklab-run/1"
SCHEMA_PARTIAL = "locklab-partial/1"
SCHEMA_FILE = Path(__file__).resolve().parent / "schema" / "results.schema.json"


@lru_cache(maxsize=None)
def schema_doc():
    with open(SCHEMA_FILE, encoding="utf-8") as f:
        return json.load(f)


@lru_cache(maxsize=None)
def _validator(definition=None):
    """A Draft 2020-12 validator for the whole file, or for one of its $defs."""
    import jsonschema

    s = schema_doc()
    if definition is not None:
        s = {"$schema": s["$schema"], "$defs": s["$defs"], "$ref": f"#/$defs/{definition}"}
    return jsonschema.Draft202012Validator(s)


def json_kind(v):
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool):
        return "boolean"
    if v is None:
        return "null"
    return "number"


def _where(path):
    """deque(['cells', 3, 'stats', 'lk_mutex']) -> 'cells[3].stats.lk_mutex'."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


_KINDS = {"object": "an object", "array": "an array", "string": "a string", "number": "a number",
          "integer": "an integer", "boolean": "true or false", "null": "null"}


def _short(v):
    t = json.dumps(v)
    return t if len(t) <= 40 else t[:37] + "..."


def describe_error(err):
    """One schema violation in words: where it is, what was expected, what was there."""
    where = _where(err.absolute_path)
    at = f"at {where}: " if where else ""
    v = err.validator
    inst = err.instance
    if v == "required":
        missing = next((k for k in err.validator_value if isinstance(inst, dict) and k not in inst),
                       None)
        name = f"{where}.{missing}" if where else missing
        return f"\"{name}\" is missing"
    if v == "type":
        want = err.validator_value
        want = [want] if isinstance(want, str) else want
        exp = " or ".join(_KINDS.get(w, w) for w in want)
        kind = json_kind(inst)
        got = f"a JSON {kind}" if kind in ("object", "array") else f"the {kind} {_short(inst)}"
        if kind == "null":
            got = "null"
        return f"{at}expected {exp}, got {got}"
    if v in ("const", "enum"):
        allowed = [err.validator_value] if v == "const" else err.validator_value
        return f"{at}expected {' or '.join(_short(a) for a in allowed)}, got {_short(inst)}"
    if v in ("minItems", "maxItems"):
        return f"{at}expected {'at least' if v == 'minItems' else 'at most'} " \
               f"{err.validator_value} items, got {len(inst)}"
    if v == "minLength":
        return f"{at}expected a non-empty string"
    if v in ("minimum", "maximum"):
        return f"{at}expected a number {'>=' if v == 'minimum' else '<='} {err.validator_value}, " \
               f"got {_short(inst)}"
    return f"{at}{err.message}"


def check(doc, definition=None):
    """None when `doc` satisfies the schema (or one of its $defs), else the problem in words: the
    most specific violation (the deepest field; a wrong value before a missing one), with how many
    there are in all."""
    return summarize_errors(list(_validator(definition).iter_errors(doc)))


def summarize_errors(errors):
    """None for no schema violation, else the most specific one in words (see check())."""
    if not errors:
        return None
    best = max(errors, key=lambda e: (len(e.absolute_path), e.validator != "required"))
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" \
        if len(errors) > 1 else ""
    return describe_error(best) + more


def parse(path, what="a results file"):
    """Read and parse one JSON file; FileError in words for every way that can fail."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise FileError(path, "no such file") from None
    except IsADirectoryError:
        raise FileError(path, f"is a directory, not {what}") from None
    except OSError as e:
        raise FileError(path, f"cannot read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FileError(path, f"not JSON: not UTF-8 text (byte {e.start})") from None
    if not text.strip():
        raise FileError(path, f"empty file, not {what}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        # The input ended inside the document: at its end, or inside a string (json reports an
        # unterminated string at its opening quote).
        if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):
            raise FileError(path, f"truncated JSON (input ends at line {e.lineno} "
                                  f"column {e.colno}: {e.msg})") from None
        raise FileError(path, f"not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise FileError(path, f"not {what}: JSON nested too deeply") from None


def check_schema_field(path, doc):
    """The "schema" field, with the messages a user needs (a run record, another version)."""
    if not isinstance(doc, dict):
        raise FileError(path, f"not a results file: top level is a JSON {json_kind(doc)}, "
                              "expected an object")
    schema = doc.get("schema")
    if schema == SCHEMA:
        return
    if "schema" not in doc:
        raise FileError(path, f"not a locklab results file: no \"schema\" field "
                              f"(expected \"{SCHEMA}\")")
    if schema == SCHEMA_RUN:
        raise FileError(path, f"schema \"{SCHEMA_RUN}\" is a single run record, not a results "
                              "file; make one with `locklab bench ... --out FILE`")
    if schema == SCHEMA_PARTIAL:
        raise FileError(path, f"schema \"{SCHEMA_PARTIAL}\" is the partial file of an unfinished "
                              "bench; continue it with `locklab bench ... --resume`")
    raise FileError(path, f"unsupported schema {json.dumps(schema)[:80]} "
                          f"(this locklab reads \"{SCHEMA}\")")


def validate(doc, path="results"):
    """Raise FileError unless `doc` is a valid results document."""
    check_schema_field(path, doc)
    problem = check(doc)
    if problem:
        raise FileError(path, f"malformed results file: {problem}")
    return doc


def load(path):
    """Parse and validate one results file; FileError("FILE: problem") on anything wrong."""
    return validate(parse(path), path)


def run_records(path, validate=True):
    """The run records of a results file (validated by load(), or only parsed when validate is
    false), or of a file of one driver run record per line (*.jsonl: `locklab-bench ... >> F.jsonl`;
    lines that are not JSON objects are skipped). FileError("FILE: problem") on anything wrong."""
    if str(path).endswith(".jsonl"):
        try:
            with open(path) as fh:
                return [json.loads(line) for line in fh if line.strip().startswith("{")]
        except (OSError, ValueError) as e:
            raise FileError(path, f"not a readable file of run records ({e})") from None
    doc = load(path) if validate else parse(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise FileError(path, "not a locklab-results file: no list of runs")
    return doc["runs"]


def dump(doc, path):
    """Write a results document atomically (write_json_atomic)."""
    write_json_atomic(doc, path)


def write_json_atomic(doc, path):
    """Write any JSON document atomically: a crash or a full disk never leaves half a file where a
    whole one was (indent 1 keeps big files readable and small). FileError when it cannot."""
    path = str(path)
    d = os.path.dirname(path) or "."
    tmp = os.path.join(d, f".{os.path.basename(path)}.tmp")
    try:
        os.makedirs(d, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise FileError(path, f"cannot write: {e.strerror or e}") from None
