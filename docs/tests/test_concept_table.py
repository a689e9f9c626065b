"""ARCHITECTURE.md's concept table names real files: a rename that forgets the map fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
# Each SDK column's files are relative to its source root.
ROOTS = {
    "Python": "sdk/python/src/colossus_agent_client/",
    "TypeScript": "sdk/typescript/src/",
    "Go": "sdk/go/",
    "Rust": "crates/colossus-sdk/src/",
}


def table_rows() -> list[dict[str, str]]:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    header_at = next(i for i, line in enumerate(lines) if line.startswith("| layer | concept |"))
    header = [cell.strip() for cell in lines[header_at].strip("|").split("|")]
    rows = []
    for line in lines[header_at + 1 :]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) != len(header):
            break
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def test_every_file_the_concept_table_names_exists() -> None:
    rows = table_rows()
    assert len(rows) > 20
    missing = []
    for row in rows:
        for sdk, root in ROOTS.items():
            for name in re.findall(r"`([^`(:]+)`", row[sdk]):
                if not (ROOT / root / name).exists():
                    missing.append(f"{row['concept']} ({sdk}): {root}{name}")
    assert not missing, missing
