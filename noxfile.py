"""Entry point for ./noxw. Sessions live in one module per area under noxsessions/.

Every module in noxsessions/ is imported (which registers its sessions) and contributes its
DEFAULT_SESSIONS to a bare ./noxw. A new area therefore needs only a new module; modules that
other areas' sessions depend on (codegen first, the conformance matrix last) are ordered here.
"""

import importlib
import pkgutil
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import noxsessions  # noqa: E402

# Areas whose position in the default run matters; every other area runs in between, by name.
FIRST = ["codegen"]
LAST = ["conformance"]

_names = sorted(m.name for m in pkgutil.iter_modules(noxsessions.__path__) if not m.name.startswith("_"))
_middle = [n for n in _names if n not in FIRST and n not in LAST]
_modules = [importlib.import_module(f"noxsessions.{n}") for n in [*FIRST, *_middle, *LAST] if n in _names]

# uv (pinned in noxsessions/requirements.txt, installed by ./noxw) creates the virtualenvs
# and installs into them, from its shared download cache; plain virtualenv + pip is the
# fallback when nox runs without ./noxw and no uv is found.
nox.options.default_venv_backend = "uv|virtualenv"

# What a bare ./noxw (and so CI) runs: every area's default sessions.
nox.options.sessions = [s for m in _modules for s in getattr(m, "DEFAULT_SESSIONS", [])]
