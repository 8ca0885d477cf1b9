"""scripts/patched-tree: the scratch worktree the "tried, not landed" records rebuild their variants
in. It must check out COMMIT, apply PATCH once (a second call reuses the tree), and refuse bad
arguments with exit 2 and one line naming the argument."""

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def git(cwd, *args):
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def make_repo(tmp_path):
    """A repository of two commits with the script in it (it works on the repository it lives in)."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "patched-tree", repo / "scripts" / "patched-tree")
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / "f.c").write_text("int x = 1;\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "one")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "f.c").write_text("int x = 2;\n")
    git(repo, "commit", "-qam", "two")
    (repo / "f.c").write_text("int x = 3;\n")
    patch = tmp_path / "p.patch"
    patch.write_text(subprocess.run(["git", "-C", str(repo), "diff"], capture_output=True,
                                    text=True, check=True).stdout)
    git(repo, "checkout", "-q", "f.c")
    return repo, first, patch


def run(repo, *args):
    return subprocess.run([str(repo / "scripts" / "patched-tree"), *args], capture_output=True,
                          text=True)


def test_checks_out_the_commit_and_applies_the_patch_once(tmp_path):
    repo, first, patch = make_repo(tmp_path)
    wt = tmp_path / "wt"
    r = run(repo, "HEAD", str(patch), str(wt))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(wt)
    assert (wt / "f.c").read_text() == "int x = 3;\n"
    # again: reused, not patched twice, not an error
    r = run(repo, "HEAD", str(patch), str(wt))
    assert r.returncode == 0, r.stderr
    assert (wt / "f.c").read_text() == "int x = 3;\n"
    # the patch does not fit the first commit, and is not applied there: refused in words
    other = tmp_path / "wt1"
    r = run(repo, first, str(patch), str(other))
    assert r.returncode == 2 and "neither applies" in r.stderr


def test_bad_arguments_exit_2_naming_them(tmp_path):
    repo, _, patch = make_repo(tmp_path)
    r = run(repo, "no-such-rev", str(patch), str(tmp_path / "a"))
    assert r.returncode == 2 and "COMMIT 'no-such-rev'" in r.stderr
    r = run(repo, "HEAD", str(tmp_path / "missing.patch"), str(tmp_path / "b"))
    assert r.returncode == 2 and "PATCH" in r.stderr and "missing.patch" in r.stderr
    (tmp_path / "plain").mkdir()
    r = run(repo, "HEAD", str(patch), str(tmp_path / "plain"))
    assert r.returncode == 2 and "not a git worktree" in r.stderr
    r = run(repo, "HEAD")
    assert r.returncode == 2 and "usage:" in r.stderr


def test_variant_driver_refuses_bad_arguments_before_building(tmp_path):
    """scripts/variant-driver (patched-tree plus the variant build): exit 2, one line, no build."""
    script = ROOT / "scripts" / "variant-driver"
    for args, word in [((), "usage"), (("--bogus", "HEAD", "p", "d"), "unknown option '--bogus'"),
                       (("HEAD", "p"), "usage"),
                       (("not-a-commit-xyz", str(tmp_path / "p.patch"), str(tmp_path / "d")), "COMMIT")]:
        r = subprocess.run([str(script), *args], capture_output=True, text=True)
        assert r.returncode == 2, (args, r.stderr)
        assert word in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
        assert r.stdout == ""
    assert not (tmp_path / "d").exists()
