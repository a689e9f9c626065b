"""What the lane runner of a bare ./noxw (noxsessions/_lanes.py) knows about each session.

A session declares its own facts beside its definition, under `@nox.session`:

    @nox.session
    @lane(locks=[CARGO_TARGET])
    def rust_tests(session): ...

    locks   shared state in the working tree that the session writes (the names below): two
            sessions that hold a lock in common never run at the same time
    size    lanes the session takes (1 unless given); a session larger than the lanes of a
            run may still start when nothing else runs

How long each session takes is measured, not declared: lane-weights.json beside this file,
rewritten by `./noxw -s bench_ci -- --fresh-clone`. Only the order of starting depends on it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

# The locks: shared state in the working tree, each written by more than one session.

# sdk/typescript/build/: the tests compiled by tsc (the same files, rewritten by each;
# typescript_lint type-checks them by compiling them there).
# node_modules and dist/ need no lane lock: `npm ci` runs under a file lock and only when
# node_modules is not from the current lock file (typescript_sdk._npm_ci), and `npm run build`
# (scripts/build.mjs) takes a lock and rebuilds dist/ only when its inputs changed, so every
# session that builds them gets the same files.
TYPESCRIPT_TESTS_BUILD = "typescript-tests-build"
# The conformance clients' own builds (conformance/clients/*: node_modules, dist, binaries).
CONFORMANCE_CLIENTS = "conformance-clients"
# sdk/python: `python -m build` and tox's package build both write src/*.egg-info and build/.
# (release and release_dry_run build the sdist and wheel there too.)
PYTHON_SDK_TREE = "python-sdk-tree"
# sdk/go: builds of the same module and the staticcheck binary under .cache/go-tools. Go's
# caches take their own locks; one Go session at a time also keeps go test -race's two
# cores to itself. Conformance is not among them: it builds its Go client once, into
# conformance/clients/go, and only reads sdk/go.
GO_MODULE = "go-module"
# The clone's Cargo target folder (noxsessions/_cargo.py). Cargo locks it itself, so a
# second session would only wait for the first one's build while holding a lane;
# conformance builds its Rust client there too but, like Go, only reads the sources.
CARGO_TARGET = "cargo-target"
# The h2spec binary, built on first use into the shared cache through one partial file
# (noxsessions/h2spec.py): the server suite runs it as one of its cases.
H2SPEC_BINARY = "h2spec-binary"

WEIGHTS_FILE = Path(__file__).resolve().parent / "lane-weights.json"
# Seconds of a session the weights file does not name.
DEFAULT_WEIGHT = 30.0


@dataclass(frozen=True)
class Lane:
    locks: frozenset[str] = frozenset()
    size: int = 1


NO_FACTS = Lane()
F = TypeVar("F", bound=Callable[..., Any])


def lane(*, locks: Iterable[str] = (), size: int = 1) -> Callable[[F], F]:
    """Declares a session's lane facts; goes under `@nox.session`, which keeps them."""

    def declare(func: F) -> F:
        func.lane = Lane(frozenset(locks), size)  # type: ignore[attr-defined]
        return func

    return declare


def lane_of(session: object) -> Lane:
    """The facts a session declared (its nox function, or the plain one), or none."""
    return getattr(session, "lane", NO_FACTS)


@dataclass(frozen=True)
class LaneFacts:
    """Every session's facts: the holders of each lock, the sizes above one, the weights."""

    locks: Mapping[str, frozenset[str]]
    sizes: Mapping[str, int]
    weights: Mapping[str, float]

    @classmethod
    def of(cls, sessions: Mapping[str, object], weights: Mapping[str, float]) -> LaneFacts:
        """The facts of `sessions` (name -> nox function)."""
        lanes = {name: lane_of(func) for name, func in sessions.items()}
        names = sorted({lock for facts in lanes.values() for lock in facts.locks})
        locks = {lock: frozenset(n for n, facts in lanes.items() if lock in facts.locks) for lock in names}
        sizes = {name: facts.size for name, facts in lanes.items() if facts.size != 1}
        return cls(locks, sizes, dict(weights))

    def weight(self, name: str) -> float:
        return self.weights.get(name, DEFAULT_WEIGHT)

    def size(self, name: str) -> int:
        return self.sizes.get(name, 1)

    def locks_of(self, name: str) -> set[str]:
        return {lock for lock, holders in self.locks.items() if name in holders}


def read_weights(path: Path = WEIGHTS_FILE) -> dict[str, float]:
    return {name: float(seconds) for name, seconds in json.loads(path.read_text())["seconds"].items()}


def write_weights(seconds: Mapping[str, float], how: str, path: Path = WEIGHTS_FILE) -> None:
    """Writes the weights file: `seconds` over the ones it had (sessions not measured keep
    theirs), rounded to whole seconds, and a line on how they were measured."""
    merged = {**read_weights(path), **seconds} if path.is_file() else dict(seconds)
    body = {"how": how, "seconds": {name: round(merged[name]) for name in sorted(merged)}}
    path.write_text(json.dumps(body, indent=2) + "\n")
