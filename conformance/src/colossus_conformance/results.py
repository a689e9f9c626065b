"""Case outcomes and the verdict of a whole run."""

from __future__ import annotations

from dataclasses import dataclass, field

PASS = "PASS"  # noqa: S105 - a status name, not a secret
FAIL = "FAIL"
XFAIL = "XFAIL"  # failed, and listed as a known failure with a reason
XPASS = "XPASS"  # listed as a known failure, yet passed: an error
NOT_RUN = "NOT_RUN"  # the client died before this case
SKIPPED = "SKIPPED"  # RECOMMENDED case needing a feature the client lacks
NOT_APPLICABLE = "N/A"  # a server case needing a capability the worker's manifest does not claim

UNEXPECTED = frozenset({FAIL, XPASS, NOT_RUN})
EXECUTED = frozenset({PASS, FAIL, XFAIL, XPASS})


@dataclass
class CaseResult:
    """The outcome of one case for one SDK."""

    sdk: str
    case_id: str
    group: str
    level: str
    status: str
    seconds: float = 0.0
    details: list[str] = field(default_factory=list)
    reason: str = ""  # known-failure reason, skip reason or NOT_RUN cause
    requirements: str = ""  # the requirement IDs the case proves, for the report

    @property
    def unexpected(self) -> bool:
        return self.status in UNEXPECTED


@dataclass
class RunVerdict:
    """Everything that decides the exit code."""

    results: list[CaseResult]
    problems: list[str] = field(default_factory=list)  # run-level errors (stale lists, ...)

    @property
    def executed(self) -> int:
        return sum(1 for r in self.results if r.status in EXECUTED)

    @property
    def ok(self) -> bool:
        return not self.problems and self.executed > 0 and not any(r.unexpected for r in self.results)

    def all_problems(self) -> list[str]:
        problems = list(self.problems)
        if self.executed == 0:
            problems.append("no case was executed")
        return problems
