"""Tool names a script may use and how each is shown through the public taxonomy.

Scripts name tools the way the Colossus runtime does (``filesystem.read``,
``shell.run``...). Only the action class and a display category ever leave
the worker; the tool name itself stays private.
"""

from __future__ import annotations

from typing import NamedTuple


class ToolFace(NamedTuple):
    action_class: str
    display_category: str


_CATALOG: dict[str, ToolFace] = {}


def _add(action_class: str, category: str, *names: str) -> None:
    for name in names:
        _CATALOG[name] = ToolFace(action_class, category)


_add("READ", "source files", "filesystem.read", "filesystem.list", "filesystem.search",
     "patch.preview", "read")
_add("READ", "repository history", "git.status", "git.diff", "git.show")
_add("READ", "source index", "repo.map", "repo.symbol_search", "repo.references",
     "repo.file_summary")
_add("READ", "workspace notes", "memory.list", "memory.search", "task.list", "plan.show",
     "context.show", "decision.list", "agent.result", "agent.list")
_add("READ", "workflows", "workflow.definition.read", "workflow.run.read")
_add("WRITE", "source files", "filesystem.write", "filesystem.edit", "patch.apply", "write",
     "edit", "delete")
_add("EXECUTE", "shell commands", "shell.run", "exec", "process")
_add("EXECUTE", "plans", "plan.execute")
_add("NETWORK", "web pages", "web.fetch", "docs.fetch", "network.http")
_add("NETWORK", "integrations", "integration.invoke")
_add("ADMINISTRATION", "schedules", "schedule.create", "schedule.set_enabled")
_add("ADMINISTRATION", "workflows", "workflow.definition.register", "workflow.run.start")
_add("ADMINISTRATION", "plans", "plan.approve_request")
_add("DELEGATION", "delegated agents", "agent.delegate")
_add("LOCAL_STATE", "worker state", "plan.discard", "memory.write", "session.set_title",
     "task.create", "task.update")


def face(tool: str) -> ToolFace | None:
    return _CATALOG.get(tool)


def known_tools() -> list[str]:
    return sorted(_CATALOG)
