"""The verification runners themselves: scripts/check-models must fail when a mutant passes, when a
correct model fails (including the real park model with issue 12's defect 2 put back), when a mutant
fails for another reason than the one it names, and when spin is missing; scripts/check-arm64 must
fail, not skip, when the cross compiler or qemu is missing. Otherwise `make check-models` and
`make check-arm64` passing would prove nothing."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECK_MODELS = ROOT / "scripts" / "check-models"
CHECK_ARM64 = ROOT / "scripts" / "check-arm64"

# A two-process mutex in Promela: MUT_NOLOCK drops the lock (mutual exclusion fails: an assertion),
# MUT_NOTHING changes nothing (so it passes, and the runner must say so), MUT_DEADLOCK never
# releases (an invalid end state, not an assertion).
TOY = """\
/* toy mutex
 * @check safety safety
 %CHECKS%
 */
bit lk;
byte in;
active [2] proctype p()
{
#ifndef MUT_NOLOCK
	atomic { lk == 0 -> lk = 1 };
#endif
	in++;
	assert(in == 1);
	in--;
#if !defined(MUT_NOLOCK) && !defined(MUT_DEADLOCK)
	lk = 0;
#endif
#ifdef MUT_NOTHING
	skip;
#endif
#ifdef BROKEN
	assert(false);
#endif
	skip
}
"""


def toy_dir(tmp_path, checks):
    d = tmp_path / "models"
    d.mkdir()
    (d / "toy.pml").write_text(TOY.replace("%CHECKS%", "\n ".join(checks)))
    (d / "MODELS").write_text("toy.pml\n")
    return d


def run_models(*args, env=None):
    return subprocess.run([sys.executable, str(CHECK_MODELS), "--jobs", "2", *map(str, args)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=900)


def test_toy_model_verified_and_its_mutant_rejected(tmp_path):
    d = toy_dir(tmp_path, ["* @mutant MUT_NOLOCK safety=assert", "* @mutant MUT_DEADLOCK safety=end"])
    p = run_models("--dir", d)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "correct" in p.stdout and "verified" in p.stdout
    assert "mutant MUT_NOLOCK" in p.stdout and "rejected: assertion violated" in p.stdout
    assert "mutant MUT_DEADLOCK" in p.stdout and "rejected: invalid end state" in p.stdout


def test_runner_fails_when_a_mutant_passes(tmp_path):
    d = toy_dir(tmp_path, ["* @mutant MUT_NOLOCK safety=assert", "* @mutant MUT_NOTHING safety=any"])
    p = run_models("--dir", d)
    assert p.returncode == 1
    assert "mutant MUT_NOTHING" in p.stdout and "PASSED" in p.stdout
    assert "FAIL" in p.stderr


def test_runner_fails_when_a_mutant_fails_for_another_reason(tmp_path):
    # MUT_DEADLOCK deadlocks; claiming it violates an assertion must not count as rejected
    d = toy_dir(tmp_path, ["* @mutant MUT_DEADLOCK safety=assert"])
    p = run_models("--dir", d)
    assert p.returncode == 1
    assert "for another reason" in p.stdout and "invalid end state" in p.stdout


def test_runner_fails_when_the_correct_model_fails(tmp_path):
    d = toy_dir(tmp_path, ["* @check broken safety -DBROKEN", "* @mutant MUT_NOLOCK safety=assert"])
    p = run_models("--dir", d)
    assert p.returncode == 1
    assert "broken" in p.stdout and "FAILED  assertion violated" in p.stdout


def test_runner_rejects_a_model_without_mutant_or_unlisted(tmp_path):
    d = toy_dir(tmp_path, [])
    p = run_models("--dir", d)
    assert p.returncode == 2 and "no @mutant line" in p.stderr
    (d / "toy.pml").write_text(TOY.replace("%CHECKS%", "* @mutant MUT_NOLOCK safety=assert"))
    (d / "other.pml").write_text((d / "toy.pml").read_text())
    p = run_models("--dir", d)
    assert p.returncode == 2 and "other.pml is not listed" in p.stderr


def test_park_model_with_defect2_put_back_fails(tmp_path):
    """The real model of the parking lot, with issue 12's defect 2 compiled in as if it were the
    correct protocol: the runner must report the lost wakeup (a parker asleep for ever)."""
    d = tmp_path / "models"
    d.mkdir()
    (d / "park.pml").write_text("#define DEFECT2 1\n" + (ROOT / "models" / "park.pml").read_text())
    (d / "MODELS").write_text("park.pml\n")
    p = run_models("--dir", d, "--check", "safety", "--no-mutants")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "FAILED  invalid end state" in p.stdout


def test_runner_fails_without_spin(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))  # neither spin nor a C compiler on PATH
    p = run_models("--dir", ROOT / "models", env=env)
    assert p.returncode == 1
    assert "spin" in p.stderr and "not found" in p.stderr and "not skipped" in p.stderr


def test_check_arm64_fails_without_cross_tools(tmp_path):
    # a PATH with the basic tools the script needs before its tool check, but no cross compiler/qemu
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("dirname", "nproc", "cmake", "date"):
        src = subprocess.run(["sh", "-c", f"command -v {tool}"], stdout=subprocess.PIPE, text=True).stdout.strip()
        if src:
            (bindir / tool).symlink_to(src)
    env = dict(os.environ, PATH=str(bindir))
    p = subprocess.run(["/bin/bash", str(CHECK_ARM64)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env, timeout=60)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "check-arm64: FAIL: missing" in p.stderr
    assert "aarch64-linux-gnu-gcc" in p.stderr and "qemu-aarch64-static" in p.stderr


def test_check_arm64_rejects_an_unknown_variant():
    p = subprocess.run(["/bin/bash", str(CHECK_ARM64), "armv7"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 2 and "unknown variant 'armv7'" in p.stderr


def run_arm64_header_check(extra):
    env = dict(os.environ, LOCKLAB_ARM64_HEADER_CFLAGS=extra)
    return subprocess.run(["/bin/bash", str(CHECK_ARM64), "llsc"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env, timeout=300)


def test_check_arm64_disassembly_check_catches_outline_atomics():
    # the LL/SC build compiled with libgcc's run-time dispatch would run LSE on an LSE CPU
    p = run_arm64_header_check("-moutline-atomics")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "calls libgcc's outline atomics" in p.stderr


def test_check_arm64_disassembly_check_catches_lse_in_the_llsc_build():
    p = run_arm64_header_check("-march=armv8.1-a")  # the last -march wins: LSE in the "LL/SC" build
    assert p.returncode == 1, p.stdout + p.stderr
    assert "(armv8-a) contains" in p.stderr and "LSE instructions: cas" in p.stderr
