"""The session modules: found, imported (which registers their sessions) and ordered.

Every module of noxsessions/ whose name does not start with `_` is an area: it registers its
sessions with nox when imported and names its DEFAULT_SESSIONS, what a bare ./noxw runs. A
new area therefore needs only a new module; the areas whose position in the default run
matters (codegen first, the conformance matrix last) are ordered here. noxfile.py and the
lane runner (noxsessions/_lanes.py) both read the sessions through this module.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import nox.registry

import noxsessions

# Areas whose position in the default run matters; every other area runs in between, by name.
FIRST = ["codegen"]
LAST = ["conformance"]


def areas() -> list[ModuleType]:
    """Every area module, imported, in the order of the default run."""
    names = sorted(m.name for m in pkgutil.iter_modules(noxsessions.__path__) if not m.name.startswith("_"))
    middle = [n for n in names if n not in FIRST and n not in LAST]
    return [importlib.import_module(f"noxsessions.{n}") for n in [*FIRST, *middle, *LAST] if n in names]


def default_sessions() -> list[str]:
    """What a bare ./noxw runs: every area's DEFAULT_SESSIONS, in the areas' order."""
    return [s for m in areas() for s in getattr(m, "DEFAULT_SESSIONS", [])]


def sessions() -> dict[str, object]:
    """Every registered session (name -> nox function), the areas imported first."""
    areas()
    return dict(nox.registry.get())
