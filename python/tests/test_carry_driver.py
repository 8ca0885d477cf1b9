"""scripts/carry-driver: the folder docs/results/issue11-16core/run.sh carries to a machine where the
project cannot be built. The carried driver must run from it with nothing but the folder's own
libraries beside the kernel (LD_LIBRARY_PATH=DIR/lib, and bench-glibc on the carried C library), and
bad arguments must be refused with exit 2 and one line naming the argument."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import real_driver

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "carry-driver"
DRIVER = real_driver()


def run(*args):
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True)


@pytest.mark.skipif(DRIVER is None, reason="no built locklab-bench (make build)")
def test_the_carried_driver_runs_from_the_folder_alone(tmp_path):
    d = tmp_path / "carry"
    r = run(d, DRIVER)
    assert r.returncode == 0, r.stderr
    if shutil.which("objdump"):
        assert "the driver needs GLIBC_" in r.stdout, r.stdout
    libs = sorted(os.listdir(d / "lib"))
    assert not any(n.startswith(("libc.so", "libm.so", "ld-linux")) for n in libs), libs
    assert any(n.startswith("ld-linux") for n in os.listdir(d / "glibc"))
    want = subprocess.run([DRIVER, "--version"], capture_output=True, text=True).stdout
    # A bare environment: no LD_LIBRARY_PATH but the folder's, no PATH.
    direct = subprocess.run([str(d / "locklab-bench"), "--version"], capture_output=True, text=True,
                            env={"LD_LIBRARY_PATH": str(d / "lib")})
    assert direct.returncode == 0 and direct.stdout == want, direct.stderr
    wrapped = subprocess.run([str(d / "bench-glibc"), "--version"], capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin"})
    assert wrapped.returncode == 0 and wrapped.stdout == want, wrapped.stderr
    # A real measurement through the carried C library, not only --version.
    m = subprocess.run([str(d / "bench-glibc"), "mutex", "--lock", "lk_mutex", "--threads", "2",
                        "--duration", "0.02", "--warmup", "0"], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin"})
    assert m.returncode == 0 and '"exclusion_ok":true' in m.stdout.replace(" ", ""), m.stderr


def test_bad_arguments_are_refused(tmp_path):
    r = run()
    assert r.returncode == 2 and "usage: scripts/carry-driver" in r.stderr
    r = run(tmp_path / "c", tmp_path / "missing")
    assert r.returncode == 2 and "DRIVER" in r.stderr and "missing" in r.stderr
    f = tmp_path / "file"
    f.write_text("")
    exe = tmp_path / "exe"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    r = run(f, exe)
    assert r.returncode == 2 and "DIR" in r.stderr and "not a directory" in r.stderr
    assert not (tmp_path / "c").exists()
