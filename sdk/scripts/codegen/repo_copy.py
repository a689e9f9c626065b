"""Make a throwaway copy of this repository, for tests and benchmarks of the codegen
scripts that must never touch the real working tree.

The copy holds every file git would consider part of the work tree (tracked plus
untracked, minus ignored), committed once in a fresh repository so that HEAD is a
baseline for `buf breaking`. The pinned tools are not copied: they live outside any
clone, in a folder named by the digest of the pins (sdk/scripts/codegen/lib.sh), which
the copy shares.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def git(cwd: Path, *args: str) -> str:
    identity = ["-c", "user.name=codegen-test", "-c", "user.email=codegen-test@localhost"]
    result = subprocess.run(
        ["git", *identity, *args], cwd=cwd, check=True, capture_output=True, text=True
    )
    return result.stdout


def copy_repo(dest: Path) -> Path:
    """Copy the work tree of ROOT into dest (created) and commit it there."""
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in sorted(set(filter(None, listed.split("\0")))):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "snapshot of the work tree")
    # The real baseline revision does not exist in the copy's fresh history: make the
    # snapshot itself the accepted baseline.
    set_breaking_baseline(dest, git(dest, "rev-parse", "HEAD").strip())
    git(dest, "commit", "-q", "-am", "accept the snapshot as the breaking baseline")
    return dest


def set_breaking_baseline(repo: Path, revision: str) -> None:
    """Point api/breaking-baseline of the repository at repo to revision."""
    path = repo / "api/breaking-baseline"
    comments = [line for line in path.read_text().splitlines() if line.startswith("#")]
    path.write_text("\n".join([*comments, revision]) + "\n")
