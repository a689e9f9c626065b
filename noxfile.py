"""Entry point for ./noxw. Sessions live in one module per area under noxsessions/.

Every module in noxsessions/ is imported (which registers its sessions) and contributes its
DEFAULT_SESSIONS to a bare ./noxw. A new area therefore needs only a new module; modules that
other areas' sessions depend on (codegen first, the conformance matrix last) are ordered in
noxsessions/_registry.py, which the lane runner of a bare ./noxw reads too.
"""

import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from noxsessions import _registry  # noqa: E402

# uv (pinned in noxsessions/requirements.txt, installed by ./noxw) creates the virtualenvs
# and installs into them, from its shared download cache; plain virtualenv + pip is the
# fallback when nox runs without ./noxw and no uv is found.
nox.options.default_venv_backend = "uv|virtualenv"

# What a bare ./noxw (and so CI) runs: every area's default sessions.
nox.options.sessions = _registry.default_sessions()
