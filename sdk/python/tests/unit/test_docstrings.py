"""Every public name is documented: what ``help()`` and an IDE show a user is complete.

The rules, checked for ``colossus_agent_client.__all__`` and
``colossus_agent_client.testing.__all__``:

* every public class and function has its own docstring;
* every public method and property of a public class has one, and it names each of the
  method's parameters, unless it points to its twin (``See :meth:`Runs.create```), whose
  docstring must then name them;
* every field of a public dataclass is named in the class docstring (``Attributes:``) or
  documented by a string right below the field;
* classes that users construct name their constructor's parameters;
* no public docstring cites the specification's internal requirement IDs.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import itertools
import pydoc
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import colossus_agent_client as colossus
from colossus_agent_client import testing

PUBLIC_MODULES = (colossus, testing)

# Handed out by the SDK, never built by users: their constructors are internal.
BUILT_BY_THE_SDK = {
    "Client",
    "AsyncClient",
    "Runs",
    "AsyncRuns",
    "Artifacts",
    "AsyncArtifacts",
    "RunPager",
    "AsyncRunPager",
    "Watch",
    "AsyncWatch",
}

# Gaps in _watch.py, which another change owns and will document. Each must still be a
# problem: the test fails once one is fixed, so that its entry is removed then.
PENDING_ELSEWHERE: set[str] = set()

_TWIN = re.compile(r"See :(?:meth|attr):`~?([A-Za-z_][\w.]*)`")
_REQUIREMENT_ID = re.compile(r"\b[CSW][0-9]{1,2}\b")


def _public_objects() -> Iterator[tuple[str, Any]]:
    for module in PUBLIC_MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                yield name, obj


def _own_doc(obj: Any) -> str:
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__") or ""
        if dataclasses.is_dataclass(obj) and doc.startswith(f"{obj.__name__}("):
            return ""  # the signature dataclasses writes when there is no docstring
        return doc
    return inspect.getdoc(obj) or ""


def _members(cls: type) -> Iterator[tuple[str, Callable[..., Any] | property]]:
    if issubclass(cls, enum.Enum):
        members = {k: v for k, v in vars(cls).items() if isinstance(v, property)}
    else:
        members = dict(vars(cls))
    for name, member in members.items():
        if name.startswith("_"):
            continue
        if isinstance(member, staticmethod | classmethod):
            yield name, member.__func__
        elif isinstance(member, property) or inspect.isfunction(member):
            yield name, member


def _doc_of(member: Callable[..., Any] | property) -> str:
    target = member.fget if isinstance(member, property) else member
    return inspect.getdoc(target) or ""


def _parameters(member: Callable[..., Any] | property) -> list[str]:
    if isinstance(member, property):
        return []
    return [p for p in inspect.signature(member).parameters if p not in ("self", "cls")]


def _resolve(path: str) -> Any:
    obj: Any = colossus
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    if inspect.ismethod(obj):
        return obj.__func__
    return obj


def _class_body(klass: type) -> list[ast.stmt]:
    """The statements of ``klass``'s definition. Public classes report the package as their
    ``__module__`` (so ``inspect.getsource`` cannot find them): look in the private module
    that defines them instead."""
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("colossus_agent_client."):
            continue
        if vars(module).get(klass.__name__) is not klass or not getattr(module, "__file__", None):
            continue
        for node in ast.parse(inspect.getsource(module)).body:
            if isinstance(node, ast.ClassDef) and node.name == klass.__name__:
                return node.body
    raise LookupError(f"no definition of {klass.__qualname__} found")


def _field_docstrings(cls: type) -> set[str]:
    """Names of fields followed by a string literal in the body of the class or a base."""
    found: set[str] = set()
    for klass in cls.__mro__:
        if not dataclasses.is_dataclass(klass):
            continue
        body = _class_body(klass)
        for first, second in itertools.pairwise(body):
            if (
                isinstance(first, ast.AnnAssign)
                and isinstance(first.target, ast.Name)
                and isinstance(second, ast.Expr)
                and isinstance(second.value, ast.Constant)
                and isinstance(second.value.value, str)
            ):
                found.add(first.target.id)
    return found


def _mentions(doc: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", doc) is not None


def _problems() -> list[str]:
    problems: list[str] = []
    for name, obj in _public_objects():
        doc = _own_doc(obj)
        if not doc.strip():
            problems.append(f"{name}: no docstring")
            continue
        if _REQUIREMENT_ID.search(doc):
            problems.append(f"{name}: cites a requirement ID")
        if inspect.isfunction(obj):
            problems += [
                f"{name}: parameter {p!r} not described"
                for p in _parameters(obj)
                if not _mentions(doc, p)
            ]
            continue
        problems += _class_problems(name, obj, doc)
    return problems


def _class_problems(name: str, cls: type, doc: str) -> list[str]:
    problems: list[str] = []
    if dataclasses.is_dataclass(cls):
        documented = _field_docstrings(cls)
        for field in dataclasses.fields(cls):
            if field.name not in documented and not _mentions(doc, field.name):
                problems.append(f"{name}.{field.name}: field not described")
    elif (
        name not in BUILT_BY_THE_SDK
        and "__init__" in vars(cls)
        and not getattr(cls, "_is_protocol", False)
    ):
        init_doc = doc + (inspect.getdoc(vars(cls)["__init__"]) or "")
        for p in _parameters(vars(cls)["__init__"]):
            if not _mentions(init_doc, p):
                problems.append(f"{name}(): parameter {p!r} not described")
    for member_name, member in _members(cls):
        qualified = f"{name}.{member_name}"
        member_doc = _doc_of(member)
        if qualified in PENDING_ELSEWHERE:
            if member_doc.strip():
                problems.append(f"{qualified}: now documented; remove it from PENDING_ELSEWHERE")
            continue
        if not member_doc.strip():
            problems.append(f"{qualified}: no docstring")
            continue
        if _REQUIREMENT_ID.search(member_doc):
            problems.append(f"{qualified}: cites a requirement ID")
        twin = _TWIN.search(member_doc)
        described = member_doc
        if twin is not None:
            target = _resolve(twin.group(1))
            if target is None:
                problems.append(f"{qualified}: its twin {twin.group(1)} does not exist")
                continue
            described = _doc_of(target)
        problems += [
            f"{qualified}: parameter {p!r} not described"
            for p in _parameters(member)
            if not _mentions(described, p)
        ]
    return problems


def test_every_public_name_is_documented() -> None:
    problems = set(_problems())
    assert sorted(problems - PENDING_ELSEWHERE) == []
    assert sorted(PENDING_ELSEWHERE - problems) == [], "fixed: remove from PENDING_ELSEWHERE"


def test_the_checker_catches_a_missing_docstring_and_an_undescribed_parameter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fetch(self: Any, run_id: str, *, verbose: bool = False) -> None:
        """Fetches ``run_id``."""

    def undocumented(self: Any) -> None:
        pass

    monkeypatch.setattr(colossus.Runs, "fetch", fetch, raising=False)
    monkeypatch.setattr(colossus.Runs, "undocumented", undocumented, raising=False)
    problems = _problems()
    assert "Runs.fetch: parameter 'verbose' not described" in problems
    assert "Runs.undocumented: no docstring" in problems
    assert not any(p.startswith("Runs.fetch: parameter 'run_id'") for p in problems)


def test_help_of_the_client_shows_its_whole_surface() -> None:
    text = pydoc.render_doc(colossus.Client, renderer=pydoc.plaintext)
    for name in ("connect", "start_sidecar", "with_options", "close", "server_info", "runs"):
        assert name in text
    assert "Raises:" in text and "Returns:" in text
    runs = pydoc.render_doc(colossus.Runs, renderer=pydoc.plaintext)
    for name in ("create", "get", "list", "watch", "cancel", "respond"):
        assert f"{name}(" in runs
