"""Renders a run as a console matrix, Markdown and JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import OrderedDict, defaultdict
from pathlib import Path

from .results import (
    EXECUTED,
    FAIL,
    NOT_APPLICABLE,
    NOT_RUN,
    PASS,
    SKIPPED,
    XFAIL,
    XPASS,
    CaseResult,
    RunVerdict,
)

_SYMBOL = {
    PASS: "pass",
    FAIL: "FAIL",
    XFAIL: "xfail",
    XPASS: "XPASS",
    NOT_RUN: "NOT_RUN",
    SKIPPED: "skip",
    NOT_APPLICABLE: "n/a",
}


def _sdks(results: list[CaseResult]) -> list[str]:
    return list(OrderedDict.fromkeys(r.sdk for r in results))


def _cases(results: list[CaseResult]) -> list[tuple[str, str, str]]:
    return list(OrderedDict.fromkeys((r.group, r.case_id, r.level) for r in results))


def group_counts(results: list[CaseResult]) -> dict[str, dict[str, dict[str, int]]]:
    """group -> sdk -> status -> count, plus a 'cases' count under sdk '*'."""
    counts: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    seen: set[tuple[str, str]] = set()
    for r in results:
        counts[r.group][r.sdk][r.status] += 1
        if (r.group, r.case_id) not in seen:
            seen.add((r.group, r.case_id))
            counts[r.group]["*"]["cases"] += 1
    return counts


def console(verdict: RunVerdict, wall_seconds: float) -> str:
    """The text printed at the end of a run."""
    results = verdict.results
    sdks = _sdks(results)
    lines: list[str] = []
    width = max([len(c[1]) for c in _cases(results)] + [10])
    lines.append(f"{'case':<{width}}  level        " + "  ".join(f"{s:<8}" for s in sdks))
    by_key = {(r.sdk, r.case_id): r for r in results}
    for _group, case_id, level in _cases(results):
        cells = "  ".join(
            f"{_SYMBOL[by_key[(s, case_id)].status]:<8}" if (s, case_id) in by_key else f"{'-':<8}"
            for s in sdks
        )
        lines.append(f"{case_id:<{width}}  {level:<11}  {cells}")
    lines.append("")
    lines.append("per group (cases; pass/executed per SDK):")
    counts = group_counts(results)
    for group in sorted(counts):
        per_sdk = []
        for s in sdks:
            c = counts[group][s]
            executed = sum(v for k, v in c.items() if k in EXECUTED)
            extra = "".join(f" {k.lower()}={v}" for k, v in sorted(c.items()) if k not in (PASS,))
            per_sdk.append(f"{s} {c[PASS]}/{executed}{extra}")
        lines.append(f"  {group:<18} {counts[group]['*']['cases']:>3} cases   " + "   ".join(per_sdk))
    lines.append("")
    for s in sdks:
        mine = [r for r in results if r.sdk == s]
        tally: dict[str, int] = defaultdict(int)
        for r in mine:
            tally[r.status] += 1
        req_fail = sum(1 for r in mine if r.level == "REQUIRED" and r.status not in (PASS, NOT_APPLICABLE))
        summary = ", ".join(f"{k.lower()} {v}" for k, v in sorted(tally.items()))
        verdict_word = "conformant" if req_fail == 0 else f"{req_fail} REQUIRED case(s) not passing"
        lines.append(f"{s}: {len(mine)} cases: {summary}; {verdict_word}")
    for r in results:
        if r.status in (FAIL, XPASS, NOT_RUN):
            lines.append(f"  [{r.sdk}] {r.status} {r.case_id}: " + ("; ".join(r.details) or r.reason))
    for p in verdict.all_problems():
        lines.append(f"RUN ERROR: {p}")
    lines.append(f"wall time {wall_seconds:.1f}s; result: {'OK' if verdict.ok else 'FAILED'}")
    # A plain closing tally: expected failures count as passed (they are what
    # the known-failure lists promise); every unexpected result counts as failed.
    passed = sum(1 for r in results if r.status in (PASS, XFAIL))
    failed = sum(1 for r in results if r.unexpected) + len(verdict.all_problems())
    skipped = sum(1 for r in results if r.status == SKIPPED)
    lines.append(
        f"conformance: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else "")
    )
    return "\n".join(lines)


def markdown(verdict: RunVerdict, wall_seconds: float, title: str = "Conformance matrix") -> str:
    results = verdict.results
    sdks = _sdks(results)
    by_key = {(r.sdk, r.case_id): r for r in results}
    out = [f"# {title}", ""]
    out.append(f"Wall time: {wall_seconds:.1f} s. Result: **{'OK' if verdict.ok else 'FAILED'}**.")
    out.append("")
    out.append("## Per group")
    out.append("")
    out.append("| group | cases | " + " | ".join(f"{s} pass/executed" for s in sdks) + " |")
    out.append("|---|---:|" + "---:|" * len(sdks))
    counts = group_counts(results)
    for group in sorted(counts):
        cells = []
        for s in sdks:
            c = counts[group][s]
            executed = sum(v for k, v in c.items() if k in EXECUTED)
            cells.append(f"{c[PASS]}/{executed}")
        out.append(f"| {group} | {counts[group]['*']['cases']} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("## Cases")
    out.append("")
    out.append("| case | level | requirements | " + " | ".join(sdks) + " |")
    out.append("|---|---|---|" + "---|" * len(sdks))
    for _group, case_id, level in _cases(results):
        cells = []
        for s in sdks:
            r = by_key.get((s, case_id))
            if r is None:
                cells.append("-")
            elif r.status == XFAIL:
                cells.append(f"xfail: {r.reason}")
            else:
                cells.append(_SYMBOL[r.status])
        reqs = next((r.requirements for r in results if r.case_id == case_id), "")
        out.append(f"| `{case_id}` | {level} | {reqs} | " + " | ".join(cells) + " |")
    problems = verdict.all_problems()
    failing = [r for r in results if r.unexpected]
    if failing or problems:
        out += ["", "## Unexpected results", ""]
        for r in failing:
            out.append(f"- [{r.sdk}] {r.status} `{r.case_id}`: " + ("; ".join(r.details) or r.reason))
        for p in problems:
            out.append(f"- run error: {p}")
    return "\n".join(out) + "\n"


def junit(verdict: RunVerdict, wall_seconds: float, suite_prefix: str = "conformance") -> bytes:
    suites = ET.Element("testsuites", name="colossus-conformance", time=f"{wall_seconds:.3f}")
    for s in _sdks(verdict.results):
        mine = [r for r in verdict.results if r.sdk == s]
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=f"{suite_prefix}.{s}",
            tests=str(len(mine)),
            failures=str(sum(1 for r in mine if r.status in (FAIL, XPASS))),
            errors=str(sum(1 for r in mine if r.status == NOT_RUN)),
            skipped=str(sum(1 for r in mine if r.status in (SKIPPED, XFAIL, NOT_APPLICABLE))),
            time=f"{sum(r.seconds for r in mine):.3f}",
        )
        for r in mine:
            tc = ET.SubElement(
                suite, "testcase", classname=f"{s}.{r.group}", name=r.case_id, time=f"{r.seconds:.3f}"
            )
            text = "\n".join(r.details)
            if r.status == FAIL:
                ET.SubElement(tc, "failure", message="assertions failed").text = text
            elif r.status == XPASS:
                ET.SubElement(tc, "failure", message="listed as a known failure but passed").text = r.reason
            elif r.status == NOT_RUN:
                ET.SubElement(tc, "error", message="not run").text = r.reason
            elif r.status == XFAIL:
                ET.SubElement(tc, "skipped", message=f"known failure: {r.reason}").text = text
            elif r.status == SKIPPED:
                ET.SubElement(tc, "skipped", message=r.reason)
            elif r.status == NOT_APPLICABLE:
                ET.SubElement(tc, "skipped", message=f"not applicable: {r.reason}")
        if verdict.problems:
            tc = ET.SubElement(suite, "testcase", classname=f"{s}.run", name="known-failures-and-run-checks")
            ET.SubElement(tc, "failure", message="run-level problems").text = "\n".join(verdict.problems)
    ET.indent(suites)
    data: bytes = ET.tostring(suites, encoding="utf-8", xml_declaration=True)
    return data


def write(verdict: RunVerdict, wall_seconds: float, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "matrix.md").write_text(markdown(verdict, wall_seconds))
    (out_dir / "junit.xml").write_bytes(junit(verdict, wall_seconds))
