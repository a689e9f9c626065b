"""Every local reason of S9's table is in each SDK's reason vocabulary (one product, four languages).

S9 promises the same reason for the same local failure in every SDK. A reason added to the table
but to only some SDKs, or named differently in one of them, fails here; each SDK's own tests then
prove when it is given.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "docs" / "requirements.md"

# The file that holds each SDK's reason vocabulary (ARCHITECTURE.md, concept table).
VOCABULARY = {
    "python": ROOT / "sdk/python/src/colossus_agent_client/_reasons.py",
    "typescript": ROOT / "sdk/typescript/src/reasons.ts",
    "go": ROOT / "sdk/go/reasons.go",
    "rust": ROOT / "crates/colossus-sdk/src/reasons.rs",
}
REASON = re.compile(r"`([A-Z][A-Z0-9_]+)`")
# Reasons of a failure only some languages have, as their table rows say: a caller's cancellation
# that is an error (TypeScript's AbortSignal, Go's context; Python and Rust cancel by their
# runtime's own means), and TypeScript's `number` and closable watch.
ONLY_IN = {
    "ABORTED": {"typescript", "go"},
    "WATCH_CLOSED": {"typescript"},
    "VALUE_OUT_OF_RANGE": {"typescript"},
}


def table_reasons() -> list[str]:
    """The reasons of S9's table (its third column), in table order."""
    text = CATALOGUE.read_text(encoding="utf-8")
    section = text[text.index("### S9:") : text.index("### S10:")]
    reasons: list[str] = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 4 and cells[2] != "reason" and not set(cells[2]) <= {"-"}:
            reasons += REASON.findall(cells[2])
    return reasons


def test_the_table_is_read() -> None:
    reasons = table_reasons()
    assert {"DESCRIPTOR_INVALID", "REQUEST_TOO_LARGE", "RESPONSE_TOO_LARGE", "SIDECAR_RESTARTS_EXHAUSTED"} <= set(
        reasons
    )
    assert set(ONLY_IN) <= set(reasons)


@pytest.mark.parametrize("sdk", sorted(VOCABULARY))
def test_each_sdk_names_every_local_reason(sdk: str) -> None:
    text = VOCABULARY[sdk].read_text(encoding="utf-8")
    expected = [reason for reason in table_reasons() if sdk in ONLY_IN.get(reason, VOCABULARY)]
    missing = [reason for reason in expected if f'"{reason}"' not in text]
    assert not missing, f"{VOCABULARY[sdk].relative_to(ROOT)} lacks {missing}"
