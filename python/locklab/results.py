"""The results file written by `locklab bench --out F` and read by compare and report.

    {"schema": "locklab-results/1", "workload": ..., "command": ..., "created": ..., "machine": {...},
     "metric": ..., "higher_is_better": ..., "baseline": ..., "locks": [...],
     "axes": {swept param: [values]}, "fixed": {every other param: value},
     "runs": [run record + {"repeat": r}], "cells": [{"params", "stats", "comparisons", "winner",
     "winner_tied_with"}]}

load() refuses anything else with a one-line UsageError naming the file: not JSON, truncated, another
schema (version), or a required key missing or of the wrong type.
"""

import json

from .errors import UsageError

SCHEMA = "locklab-results/1"

_REQUIRED = {
    "workload": str, "metric": str, "higher_is_better": bool, "locks": list, "axes": dict,
    "fixed": dict, "runs": list, "cells": list,
}


def load(path):
    """Parse and validate one results file; UsageError("FILE: problem") on anything wrong."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not JSON (not UTF-8 text)")
    if not text.strip():
        raise UsageError(f"{path}: empty file, expected a {SCHEMA} results file")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):
            raise UsageError(f"{path}: truncated JSON (ends at byte {len(text)} inside a value)")
        raise UsageError(f"{path}: not JSON ({e.msg} at line {e.lineno} column {e.colno})")
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: expected a JSON object, got {type(doc).__name__}")
    schema = doc.get("schema")
    if schema != SCHEMA:
        raise UsageError(f"{path}: schema {schema!r} is not supported (expected {SCHEMA!r})")
    for key, typ in _REQUIRED.items():
        if key not in doc:
            raise UsageError(f"{path}: missing key {key!r}")
        if not isinstance(doc[key], typ):
            raise UsageError(f"{path}: key {key!r} should be a {typ.__name__}")
    for i, c in enumerate(doc["cells"]):
        if not isinstance(c, dict) or not isinstance(c.get("params"), dict) \
                or not isinstance(c.get("stats"), dict):
            raise UsageError(f"{path}: cells[{i}] needs 'params' and 'stats' objects")
        for lock, st in c["stats"].items():
            vals = st.get("values") if isinstance(st, dict) else None
            if not isinstance(vals, list) or not vals or \
                    not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
                raise UsageError(f"{path}: cells[{i}].stats.{lock}.values should be a non-empty "
                                 "list of numbers")
    return doc


def dump(doc, path):
    """Write a results document (indent 1 keeps big files readable and small)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
