"""locklab: the contention lab's command-line front end.

The C driver (``locklab-bench``) measures; this package orchestrates runs, computes statistics and
prints tables.  It never times anything itself and never keeps its own list of algorithms or workloads:
both come from ``locklab-bench describe`` and ``locklab-bench list --json``.

Modules:
    driver    find and talk to locklab-bench (describe, list, one run)
    runner    turn a bench command into a run plan, execute it (each run kept as it finishes, in
              OUT.partial), assemble the results document
    hostload  the machine's load around every run, and the busy rule
    stats     statistics on repeated runs (median CI, ratio CI, Mann-Whitney, overlap, verdicts)
    results   the results file: its JSON Schema (schema/results.schema.json), loading, validation
    tables    rich tables that fit the terminal, and the changelog-style text blocks
    headline  one lock against every other lock: faster / tied / slower cells
    compare   compare two results files (baseline vs candidate)
    demo      lk_mutex against the locks that matter, with a headline of claims
    suite     every experiment of the source documents
    report    the static HTML report
    version   locklab's version and git commit
    cli       argument parsing and the ``locklab`` entry point
"""

__version__ = "0.1.0"

from .errors import LocklabError, UsageError

__all__ = ["LocklabError", "UsageError", "__version__"]
