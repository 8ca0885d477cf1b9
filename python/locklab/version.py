"""What locklab is this: its version and the git commit of its source.

    locklab --version           locklab 0.1.0 (git 1a2b3c4), driver: locklab-bench 0.1.0 (git 1a2b3c4,
                                RelWithDebInfo)

The commit is asked of git at run time when the package runs from a git checkout (`pip install -e`,
as `make` sets it up); anywhere else it is "unknown".  The driver's version, commit and build type are
compiled into it by CMake (lab/main.c, `locklab-bench --version`).
"""

import subprocess
from functools import lru_cache
from pathlib import Path

from . import __version__

SRC = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def git_commit():
    """Short commit hash of the checkout this package runs from (+"-dirty" when it has changes), or
    "unknown" outside a git checkout."""
    repo = SRC.parents[1]
    if not (repo / ".git").exists():
        return "unknown"
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        if head.returncode != 0 or not head.stdout.strip():
            return "unknown"
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no",
                                "--", str(SRC)], capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance():
    """{"version", "commit"} of this locklab, for results files."""
    return {"version": __version__, "commit": git_commit()}


def version_line(driver_path=None):
    """The `locklab --version` text: this package, then the driver's own --version when found."""
    line = f"locklab {__version__} (git {git_commit()})"
    if driver_path is None:
        return line + "\nlocklab-bench: not found (run `make build`)"
    try:
        res = subprocess.run([driver_path, "--version"], capture_output=True, text=True, timeout=30)
        drv = res.stdout.strip() if res.returncode == 0 and res.stdout.strip() else \
            f"{driver_path}: --version failed (exit {res.returncode})"
    except (OSError, subprocess.SubprocessError) as e:
        drv = f"{driver_path}: cannot run: {e}"
    return f"{line}\n{drv}"
