"""locklab: the contention lab's command-line front end.

The C driver (``locklab-bench``) measures; this package orchestrates runs, computes statistics and
prints tables.  It never times anything itself and never keeps its own list of algorithms or workloads:
both come from ``locklab-bench describe`` and ``locklab-bench list --json``.

Modules:
    driver   find and talk to locklab-bench (describe, list, one run)
    runner   turn a bench command into a run plan, execute it, assemble the results document
    stats    statistics on repeated runs (median CI, ratio CI, Mann-Whitney, overlap, verdicts)
    results  the results file: schema constants, loading and validation
    tables   rich tables and the changelog-style text blocks
    compare  compare two results files (baseline vs candidate)
    demo     the seed-004 threads x load matrix
    cli      argument parsing and the ``locklab`` entry point
"""

__version__ = "0.1.0"

from .errors import LocklabError, UsageError

__all__ = ["LocklabError", "UsageError", "__version__"]
