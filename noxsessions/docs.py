"""Sessions for the repository's own documentation.

    docs_check   docs/requirements.md explains every requirement ID cited anywhere in the
                 repository, and every path and case pattern it lists is real
"""

from __future__ import annotations

from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent.parent

DEFAULT_SESSIONS = ["docs_check"]


@nox.session
def docs_check(session: nox.Session) -> None:
    """Check docs/requirements.md against the IDs cited in code, tests, cases and docs."""
    session.install("pytest==9.2.0", "PyYAML==6.0.3")
    session.run("pytest", "-p", "no:cacheprovider", "-q", str(ROOT / "docs/tests"), *session.posargs)
