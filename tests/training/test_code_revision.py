"""The code revision a run records (``environment()["code"]``): the commit of syntaxformer's own git checkout the
package is the ``src/syntaxformer`` of, and whether the package folder has uncommitted changes; nothing outside a
work tree, nothing for an install inside someone else's repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from syntaxformer.training.blocks import code_revision, environment

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def _repo(repo: Path, project: str, package: str) -> Path:
    """A git repository with a ``pyproject.toml`` naming ``project``, a package folder (one tracked module) and a
    tracked file beside it."""
    (repo / package).mkdir(parents=True)
    (repo / package / "mod.py").write_text("x = 1\n")
    (repo / "README.md").write_text("readme\n")
    (repo / "pyproject.toml").write_text(f'[project]\nname = "{project}"\nversion = "1.0"\n')
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "first")
    return repo


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A stand-in for syntaxformer's checkout: its package folder is ``src/syntaxformer``."""
    return _repo(tmp_path / "repo", "syntaxformer", "src/syntaxformer")


def test_clean_checkout_gives_its_commit(checkout):
    rev = code_revision(checkout / "src" / "syntaxformer")
    assert rev == {"commit": _git(checkout, "rev-parse", "HEAD"), "modified": False}
    assert len(rev["commit"]) == 40


def test_a_changed_tracked_file_of_the_package_marks_it_modified(checkout):
    (checkout / "src" / "syntaxformer" / "mod.py").write_text("x = 2\n")
    assert code_revision(checkout / "src" / "syntaxformer")["modified"] is True


def test_changes_outside_the_package_and_untracked_files_do_not(checkout):
    (checkout / "README.md").write_text("changed\n")  # tracked, but not the package's
    (checkout / "src" / "syntaxformer" / "scratch.py").write_text("y = 0\n")  # the package's, but untracked
    assert code_revision(checkout / "src" / "syntaxformer")["modified"] is False


def test_a_new_commit_is_a_new_revision(checkout):
    before = code_revision(checkout / "src" / "syntaxformer")["commit"]
    (checkout / "src" / "syntaxformer" / "mod.py").write_text("x = 3\n")
    _git(checkout, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qam", "second")
    after = code_revision(checkout / "src" / "syntaxformer")
    assert after["commit"] != before and after["modified"] is False


def test_an_install_inside_a_users_repository_records_no_revision(tmp_path):
    """A virtual environment inside the user's own repository: the user's commit is not syntaxformer's code."""
    user = _repo(tmp_path / "user", "my-app", ".venv/lib/python3/site-packages/syntaxformer")
    assert code_revision(user / ".venv" / "lib" / "python3" / "site-packages" / "syntaxformer") is None
    # nor does a repository of another project with the same layout
    other = _repo(tmp_path / "other", "not-syntaxformer", "src/syntaxformer")
    assert code_revision(other / "src" / "syntaxformer") is None


def test_outside_a_work_tree_there_is_no_revision(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    inside = subprocess.run(["git", "-C", str(plain), "rev-parse"], capture_output=True, check=False)
    if inside.returncode == 0:
        pytest.skip(f"the temporary folder {tmp_path} lies in a git work tree")
    assert code_revision(plain) is None


def test_environment_records_the_revision_only_where_there_is_one():
    env = environment()
    revision = code_revision()
    assert env.get("code") == revision
    assert ("code" in env) == (revision is not None)
