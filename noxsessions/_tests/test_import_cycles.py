"""The import-circle check of ARCHITECTURE.md's layers: its graph reader per language, and the
repository itself (no hand-written package may hold a circle)."""

from __future__ import annotations

from pathlib import Path

import pytest

from noxsessions import _import_cycles as ic


def test_circles_finds_each_strongly_connected_set_once() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert ic.circles(graph) == [["a", "b", "c"]]


def _package(tmp_path: Path, language: str, files: dict[str, str]) -> ic.Package:
    root = tmp_path / "pkg"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return ic.Package("test", language, root)


def test_python_relative_and_type_only_imports_count(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        "python",
        {
            "__init__.py": "",
            "a.py": "from .b import B\n",
            "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n",
            "sub/__init__.py": "from . import c  # noqa\n",
            "sub/c.py": "from ..a import A\n",
        },
    )
    assert ic.package_circles(package) == [["pkg.a", "pkg.b"]]


def test_python_package_importing_its_own_modules_is_no_circle(tmp_path: Path) -> None:
    package = _package(
        tmp_path, "python", {"__init__.py": "from . import a\n", "a.py": "from . import b\n", "b.py": ""}
    )
    assert ic.package_circles(package) == []


def test_typescript_specifiers_resolve_to_files(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        "typescript",
        {
            "a.ts": 'import { b } from "./b.js";\n',
            "b.ts": 'import type { C } from "./t/c.js";\n',
            "t/c.ts": 'export { a } from "../a.js";\n',
            "d.ts": 'import { a } from "./a.js";\n',
        },
    )
    assert ic.package_circles(package) == [["a.ts", "b.ts", "t/c.ts"]]


def test_rust_uses_follow_reexports_to_the_defining_module(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        "rust",
        {
            "lib.rs": "mod client;\nmod runs;\npub mod watch;\npub use client::Client;\npub use watch::Watch;\n",
            "client.rs": "use crate::runs::Runs;\n",
            "runs.rs": "use crate::{Client, watch::Watch};\n",
            "watch/mod.rs": "mod stream;\npub use stream::Watch;\n",
            "watch/stream.rs": "use crate::Client;\nuse super::*;\n",
        },
    )
    assert ic.package_circles(package) == [["client", "runs", "watch::stream"]]


@pytest.mark.parametrize("package", ic.PACKAGES, ids=lambda p: p.name)
def test_no_hand_written_package_has_an_import_circle(package: ic.Package) -> None:
    assert ic.package_circles(package) == []
