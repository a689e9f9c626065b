"""Each SDK README's "Install from a release build" block, run as pasted (issue 38).

Every SDK README (sdk/python, sdk/typescript, sdk/go, crates/colossus-sdk) has exactly one
shell block marked

    <!-- install-test: release -->
    ```sh
    ...
    ```

that installs the SDK from the release's artifacts in `dist/`. The release sessions run that
block, unchanged, with bash (`set -euo pipefail`) in a scratch project outside the clone
whose `dist` is the release's dist/ folder; the commands that build and run the round trip
follow in the same shell, so what the block exports (Go's GOPROXY) holds for them. Only the
environment differs from a user's: the machine's caches and offline switches, never
anything the block itself would need.
"""

from __future__ import annotations

import re
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent.parent
READMES = {
    "python": ROOT / "sdk/python/README.md",
    "typescript": ROOT / "sdk/typescript/README.md",
    "go": ROOT / "sdk/go/README.md",
    "rust": ROOT / "crates/colossus-sdk/README.md",
}
MARKER = "<!-- install-test: release -->"
_BLOCK = re.compile(re.escape(MARKER) + r"\n```sh\n(?P<code>.*?)```", re.S)


def release_block(readme: Path) -> str:
    """The one marked install block of `readme` (a missing or second one is an error)."""
    text = readme.read_text()
    blocks = [m.group("code") for m in _BLOCK.finditer(text)]
    if len(blocks) != 1 or text.count(MARKER) != 1:
        raise ValueError(f"{readme.relative_to(ROOT)}: expected one `{MARKER}` ```sh block, "
                         f"found {len(blocks)} block(s) and {text.count(MARKER)} marker(s)")
    return blocks[0]


def run_block(session: nox.Session, sdk: str, project: Path, dist: Path, env: dict[str, str],
              then: str = "") -> None:
    """Runs `sdk`'s install block as pasted in `project` (dist/ beside it), then `then`."""
    block = release_block(READMES[sdk])
    project.mkdir(parents=True)
    (project / "dist").symlink_to(dist, target_is_directory=True)
    session.log(f"{sdk}: the README's install block, as pasted, in {project}:\n{block.rstrip()}")
    script = f"set -euo pipefail\n{block}\n# --- the round trip, after the block ---\n{then}"
    with session.chdir(project):
        session.run("bash", "-c", script, external=True, env=env)
