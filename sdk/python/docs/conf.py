"""Sphinx configuration of the Python SDK's API reference.

Built by ``./noxw -s python_sdk_docs`` with warnings as errors (``-W``) and nitpicky
cross-references, against the installed wheel, so a broken reference, a malformed
docstring or a public name without a docstring fails the build.
"""

from __future__ import annotations

from typing import Any

from sphinx.util import logging

import colossus_agent_client

logger = logging.getLogger(__name__)

project = "colossus-agent-client"
release = colossus_agent_client.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
exclude_patterns = ["_build", "requirements.txt"]
html_theme = "alabaster"

autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
# Signatures show the types; descriptions say what each argument means.
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True

nitpicky = True
# Types from other libraries (no intersphinx: the build downloads nothing) and typing
# internals that autodoc cannot resolve. Everything of this SDK must resolve.
nitpick_ignore_regex = [
    (r"py:.*", r"(grpc|google|cryptography|datetime|pathlib|os|collections)\..*"),
    (r"py:.*", r"(typing|enum|types|random)\..*"),
    (r"py:.*", r"(Path|PathLike|datetime|timedelta|Enum|IntEnum|StrEnum|Exception|BaseException)"),
    (r"py:.*", r"(Iterator|AsyncIterator|Iterable|AsyncIterable|Mapping|Sequence)"),
    (r"py:.*", r"(Callable|Awaitable)"),
    (r"py:.*", r"(Any|Self|Literal|TypeAlias|Protocol|Generic|TypeVar|ClassVar|Optional|Union)"),
    (r"py:.*", r"(_[A-Za-z]\w*|.*\._\w.*)"),
    # Pieces of string literals in Literal[...] annotations (Sphinx splits 'runs:read').
    (r"py:.*", r".*'.*"),
    # A type alias of a private module, described on the option that takes it.
    (r"py:.*", r"TraceContextProvider"),
]


def _require_docstring(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """A public name without a docstring of its own is a warning, so -W fails the build."""
    if name.rsplit(".", 1)[-1].startswith("_") or what in ("attribute", "data", "property"):
        return
    if not (getattr(obj, "__doc__", None) or "").strip():
        logger.warning("%s %s has no docstring", what, name)


def setup(app: Any) -> None:
    app.connect("autodoc-process-docstring", _require_docstring)
