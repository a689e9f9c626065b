"""Import circles between the modules of each hand-written package (ARCHITECTURE.md, "Layers").

A circle is a set of modules that import each other, directly or through others: none of them
can be read, tested or moved alone. Each package's graph is drawn from its own source:

- Python: `from .x import`, `from ..x import`, `import pkg.x` and `from pkg.x import` lines,
  type-only imports included (a circle hidden behind `TYPE_CHECKING` is still one to a reader);
- TypeScript: relative `import`/`export ... from "./x.js"` specifiers, `import type` included;
- Rust: `use crate::a::b` paths, each resolved to the file that defines the item: a name the
  crate root or a `mod.rs` re-exports (`pub use x::{A, B}`) is followed to its module.

Go needs no check: a package is one module, and the compiler refuses circles between packages.
`python -m noxsessions._import_cycles` prints every package's circles; the self-tests fail on any.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Package:
    """A hand-written package whose modules must not import each other in a circle."""

    name: str
    language: str
    root: Path
    # Folders under root that are generated or tests, not part of the package's design.
    skip: tuple[str, ...] = ()


PACKAGES = (
    Package("python sdk", "python", ROOT / "sdk/python/src/colossus_agent_client", ("api",)),
    Package("reference worker", "python", ROOT / "conformance/src/colossus_reference_worker", ("_gen",)),
    Package("conformance runner", "python", ROOT / "conformance/src/colossus_conformance"),
    Package("typescript sdk", "typescript", ROOT / "sdk/typescript/src", ("gen",)),
    Package("rust sdk", "rust", ROOT / "crates/colossus-sdk/src", ("gen",)),
    Package("desktop bridge", "rust", ROOT / "crates/colossus-desktop-bridge/src"),
)


def _files(package: Package, suffix: str) -> Iterator[Path]:
    for path in sorted(package.root.rglob(f"*{suffix}")):
        parts = path.relative_to(package.root).parts
        if not any(part in package.skip for part in parts[:-1]):
            yield path


# --- Python -------------------------------------------------------------------------------


def _python_module(package: Package, path: Path) -> str:
    rel = path.relative_to(package.root).with_suffix("")
    parts = [package.root.name, *rel.parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _python_graph(package: Package) -> dict[str, set[str]]:
    modules = {_python_module(package, p): p for p in _files(package, ".py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        here = module.split(".") if is_package else module.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                stem = ".".join([*base, *(node.module.split(".") if node.module else [])])
                # `from . import x` names module x, not the package; `from .m import A` names m.
                targets = [
                    f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in modules else stem for alias in node.names
                ]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                found = _innermost(target, modules)
                if found and found != module and not module.startswith(found + "."):
                    graph[module].add(found)
    return graph


def _innermost(name: str, modules: Mapping[str, Path]) -> str | None:
    """The module `name` names, or the innermost module that contains it."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


# --- TypeScript ---------------------------------------------------------------------------

_TS_SPECIFIER = re.compile(r"""(?:^|\s)(?:import|export)\b[^;'"]*?from\s*["'](\.[^"']+)["']""", re.MULTILINE)


def _typescript_graph(package: Package) -> dict[str, set[str]]:
    files = {p.relative_to(package.root).as_posix(): p for p in _files(package, ".ts")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        for spec in _TS_SPECIFIER.findall(path.read_text(encoding="utf-8")):
            target = (path.parent / spec).resolve()
            candidates = [target.with_suffix(".ts"), target / "index.ts", target]
            for candidate in candidates:
                rel = _relative(candidate, package.root)
                if rel in files and rel != name:
                    graph[name].add(rel)
                    break
    return graph


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


# --- Rust ---------------------------------------------------------------------------------

_RUST_USE = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+crate::([^;]+);", re.MULTILINE)


def _rust_modules(package: Package) -> dict[str, Path]:
    """Module path ("" for the crate root, "watch::core") -> its file."""
    modules: dict[str, Path] = {}
    for path in _files(package, ".rs"):
        rel = path.relative_to(package.root).with_suffix("").parts
        if rel in (("lib",), ("main",)):
            modules[""] = path
        elif rel[-1] == "mod":
            modules["::".join(rel[:-1])] = path
        else:
            modules["::".join(rel)] = path
    return modules


def _expand(tree: str) -> Iterator[str]:
    """`a::{b, c::{d, e}}` -> `a::b`, `a::c::d`, `a::c::e` (aliases and `self` dropped)."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    if "{" not in tree:
        yield tree
        return
    head, _, rest = tree.partition("{")
    inner = rest[: rest.rfind("}")]
    depth, start = 0, 0
    for i, ch in enumerate(inner + ","):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            item = inner[start:i]
            start = i + 1
            if not item:
                continue
            for sub in _expand(item):
                yield head.rstrip(":") if sub == "self" else head + sub


def _rust_graph(package: Package) -> dict[str, set[str]]:
    modules = _rust_modules(package)
    texts = {m: p.read_text(encoding="utf-8") for m, p in modules.items()}
    # Names a module re-exports from its children: ("", "Error") -> "error".
    reexports: dict[tuple[str, str], str] = {}
    for module, text in texts.items():
        for match in _RUST_USE.finditer(text):
            if not match.group(1):
                continue
            for path in _expand(match.group(2)):
                *owner, item = path.split("::")
                reexports[(module, item)] = "::".join(owner)
        for match in re.finditer(r"^\s*pub(?:\([^)]*\))?\s+use\s+(?!crate::)(\w[^;]*);", text, re.MULTILINE):
            for path in _expand(match.group(1)):
                *owner, item = path.split("::")
                if owner and owner[0] not in ("std", "super", "self"):
                    prefix = f"{module}::" if module else ""
                    reexports[(module, item)] = prefix + "::".join(owner)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, text in texts.items():
        for match in _RUST_USE.finditer(text):
            for path in _expand(match.group(2)):
                target = _rust_resolve(path.split("::"), modules, reexports)
                if target is not None and target != module and not _rust_contains(module, target):
                    graph[module].add(target)
    return graph


def _rust_contains(inner: str, outer: str) -> bool:
    """Whether `inner` is `outer`'s descendant (a module may use its parent's items freely:
    the parent declares it, which is not a dependency of design)."""
    return outer == "" or inner.startswith(outer + "::")


def _rust_resolve(
    parts: list[str], modules: Mapping[str, Path], reexports: Mapping[tuple[str, str], str]
) -> str | None:
    """The innermost module file `crate::<parts>` names, following re-exports."""
    current = ""
    remaining = list(parts)
    hops = 0
    while remaining:
        part = remaining[0]
        candidate = f"{current}::{part}" if current else part
        if candidate in modules:
            current = candidate
            remaining.pop(0)
            continue
        followed = reexports.get((current, part))
        if followed is None or followed not in modules or hops > 8:
            break
        hops += 1
        current = followed
        remaining.pop(0)
    return current or None


# --- circles ------------------------------------------------------------------------------


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                members.append(top)
                if top == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


GRAPHS = {"python": _python_graph, "typescript": _typescript_graph, "rust": _rust_graph}


def package_circles(package: Package) -> list[list[str]]:
    return circles(GRAPHS[package.language](package))


def main() -> int:
    total = 0
    for package in PACKAGES:
        found = package_circles(package)
        total += len(found)
        print(f"{package.name}: {len(found)} circle(s)")
        for members in found:
            print("  " + " <-> ".join(members))
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
