//! The tool catalogue of scripts: each tool name maps to the public action class and
//! display category that events and approvals show (the name itself never leaves).

use crate::model::ActionClass;

const CATALOG: &[(ActionClass, &str, &[&str])] = &[
    (
        ActionClass::Read,
        "source files",
        &[
            "filesystem.read",
            "filesystem.list",
            "filesystem.search",
            "patch.preview",
            "read",
        ],
    ),
    (
        ActionClass::Read,
        "repository history",
        &["git.status", "git.diff", "git.show"],
    ),
    (
        ActionClass::Read,
        "source index",
        &[
            "repo.map",
            "repo.symbol_search",
            "repo.references",
            "repo.file_summary",
        ],
    ),
    (
        ActionClass::Read,
        "workspace notes",
        &[
            "memory.list",
            "memory.search",
            "task.list",
            "plan.show",
            "context.show",
            "decision.list",
            "agent.result",
            "agent.list",
        ],
    ),
    (
        ActionClass::Read,
        "workflows",
        &["workflow.definition.read", "workflow.run.read"],
    ),
    (
        ActionClass::Write,
        "source files",
        &[
            "filesystem.write",
            "filesystem.edit",
            "patch.apply",
            "write",
            "edit",
            "delete",
        ],
    ),
    (
        ActionClass::Execute,
        "shell commands",
        &["shell.run", "exec", "process"],
    ),
    (ActionClass::Execute, "plans", &["plan.execute"]),
    (
        ActionClass::Network,
        "web pages",
        &["web.fetch", "docs.fetch", "network.http"],
    ),
    (
        ActionClass::Network,
        "integrations",
        &["integration.invoke"],
    ),
    (
        ActionClass::Administration,
        "schedules",
        &["schedule.create", "schedule.set_enabled"],
    ),
    (
        ActionClass::Administration,
        "workflows",
        &["workflow.definition.register", "workflow.run.start"],
    ),
    (
        ActionClass::Administration,
        "plans",
        &["plan.approve_request"],
    ),
    (
        ActionClass::Delegation,
        "delegated agents",
        &["agent.delegate"],
    ),
    (
        ActionClass::LocalState,
        "worker state",
        &[
            "plan.discard",
            "memory.write",
            "session.set_title",
            "task.create",
            "task.update",
        ],
    ),
];

/// The public face of a tool, or `None` for a name outside the catalogue.
pub(crate) fn face(tool: &str) -> Option<(ActionClass, &'static str)> {
    CATALOG
        .iter()
        .find(|(_, _, names)| names.contains(&tool))
        .map(|(class, category, _)| (*class, *category))
}

/// Every tool name, for a runtime that grants them all.
pub(crate) fn all_tools() -> impl Iterator<Item = &'static str> {
    CATALOG
        .iter()
        .flat_map(|(_, _, names)| names.iter().copied())
}
