"""The form of a commit subject: an area prefix, then at most 72 characters in all.

`area: what changed` (`worker:`, `sdk/go:`, `rust:`, `nox:`, `conformance:`, `docs:`; two
areas as `sdk/go, sdk/python:`), with the why and the figures in the body. Checked for every
commit after FIRST_CHECKED by ci_selftest (noxsessions/_tests/test_commit_form.py); older
commits predate the rule.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

MAX_SUBJECT = 72
# The newest commit before the rule; everything after it is checked.
FIRST_CHECKED_AFTER = "99d881f"
AREA = r"[a-z0-9][a-z0-9/_.-]*"
SUBJECT = re.compile(rf"{AREA}(, {AREA})*: \S.*")


def problem(subject: str) -> str | None:
    """Why `subject` breaks the rule, or None."""
    if len(subject) > MAX_SUBJECT:
        return f"{len(subject)} characters (at most {MAX_SUBJECT})"
    if not SUBJECT.fullmatch(subject):
        return "no area prefix (`area: what changed`, e.g. `worker:` or `sdk/go:`)"
    return None


def subjects_since(root: Path, base: str = FIRST_CHECKED_AFTER) -> list[tuple[str, str]]:
    """(short hash, subject) of each non-merge commit after `base` on HEAD."""
    out = subprocess.run(
        ["git", "log", "--no-merges", "--format=%h%x00%s", f"{base}..HEAD"],
        cwd=root, check=True, capture_output=True, text=True,
    ).stdout
    return [tuple(line.split("\0", 1)) for line in out.splitlines() if line]  # type: ignore[misc]
