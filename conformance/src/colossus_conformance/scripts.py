"""Turns the catalogue's abstract run scripts into run input for the worker.

Cases describe what a run should do (``script:`` in a ``create_run`` step's
arguments) in the worker's script language, without its header line. The reference worker's scripted runtime
(W14) reads its script from the run input; this module is the only place that
knows that encoding, so the catalogue and the clients never depend on it.
"""

from __future__ import annotations

import copy
from typing import Any

SCRIPT_HEADER = "colossus-script v1"


def render_script(script: str) -> list[dict[str, Any]]:
    """Encodes a script (one step per line, no header) as the run's input parts."""
    return [{"text": SCRIPT_HEADER + "\n" + script.strip() + "\n"}]


def render_step(step: dict[str, Any]) -> dict[str, Any]:
    """Returns the step as sent to a client.

    Runner-side shorthands are expanded here so clients only ever see plain
    input parts: ``script`` (a run script), ``repeat_input`` (``{count, text}``:
    that many identical text parts), ``large_text`` (``{bytes}``: one text
    part of exactly that many ASCII bytes), and the scripts of a ``list_runs``
    step's ``create_after_first_page``.
    """
    step = copy.deepcopy(step)
    args = step.get("args")
    if step["op"] == "list_runs" and args and "create_after_first_page" in args:
        # Each entry becomes the full text of one run's single input part.
        args["create_after_first_page"] = [
            render_script(script)[0]["text"] for script in args["create_after_first_page"]
        ]
        return step
    if step["op"] != "create_run" or not args:
        return step
    parts: list[dict[str, Any]] = []
    if "script" in args:
        parts += render_script(args.pop("script"))
    if "repeat_input" in args:
        spec = args.pop("repeat_input")
        parts += [{"text": spec["text"]} for _ in range(spec["count"])]
    if "large_text" in args:
        parts.append({"text": "x" * args.pop("large_text")["bytes"]})
    if parts:
        args["input"] = parts + args.get("input", [])
    return step
