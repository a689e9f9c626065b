"""Parser of the run script language.

A text input part whose first line is exactly ``colossus-script v1`` is a
script: one step per line, blank lines and ``#`` comments ignored. See
``conformance/docs/reference-worker.md`` for the language.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from .tools import face

HEADER = "colossus-script v1"
MAX_STEPS = 20_000
# Bounds that keep every Run message (and so every ListRuns page of three) far
# below the advertised response limit.
MAX_QUESTION_BYTES = 4096
_ORIGIN_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\]")
# A failure message rides in every Run reply next to up to 1 MiB of output; kept short
# so a ListRuns page of three runs stays under the 4 MiB response cap.
MAX_FAILURE_MESSAGE_BYTES = 4096
MAX_CHOICE_BYTES = 256
_FAILURE_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")
# ASCII digits only (str.isdigit and \d accept other scripts' digits), and short.
_NUMBER = re.compile(r"[0-9]{1,6}")


class ScriptError(ValueError):
    """A script line is malformed; the message names the line."""


@dataclass(frozen=True)
class Step:
    op: str
    text: str = ""
    tool: str = ""
    mode: str = ""
    origin: str = ""
    choices: tuple[str, ...] = ()
    millis: int = 0


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append({"n": "\n", "t": "\t", "\\": "\\", "|": "|"}.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _origin(value: str, line: int) -> str:
    parts = urlsplit(value)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.username
        or parts.password
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise ScriptError(f"line {line}: an origin is scheme://host[:port] only")
    # The origin is shown to the application as it is: a DNS name or IP literal of
    # bounded length and a real port, nothing else.
    try:
        port = parts.port
    except ValueError:
        port = None
        valid_port = False
    else:
        valid_port = port is None or port > 0
    host = parts.netloc.rsplit(":", 1)[0] if port is not None else parts.netloc
    if not valid_port or not _ORIGIN_HOST.fullmatch(host):
        raise ScriptError(f"line {line}: an origin's host is a DNS name or an IP literal "
                          f"of at most 253 characters, with a port of 1-65535")
    return f"{parts.scheme}://{parts.netloc}"


def _tool(name: str, line: int) -> str:
    if face(name) is None:
        raise ScriptError(f"line {line}: unknown tool {name!r}")
    return name


def _step(words: str, line: int) -> Step:
    op, _, rest = words.partition(" ")
    rest = rest.strip()
    if op == "say":
        if not rest:
            raise ScriptError(f"line {line}: say needs text")
        return Step("say", text=_unescape(rest))
    if op == "tool":
        args = rest.split()
        if not args or len(args) > 2 or (len(args) == 2 and args[1] not in ("ok", "fail")):
            raise ScriptError(f"line {line}: tool NAME [ok|fail]")
        return Step("tool", tool=_tool(args[0], line), mode=args[1] if len(args) == 2 else "ok")
    if op == "approve":
        args = rest.split()
        if not args or len(args) > 2:
            raise ScriptError(f"line {line}: approve NAME [ORIGIN]")
        origin = _origin(args[1], line) if len(args) == 2 else ""
        return Step("approve", tool=_tool(args[0], line), origin=origin)
    if op == "ask":
        pieces = [_unescape(p.strip()) for p in re.split(r"(?<!\\)\|", rest)]
        question, choices = pieces[0], tuple(pieces[1:])
        if not question or not choices or any(not c for c in choices):
            raise ScriptError(f"line {line}: ask QUESTION | CHOICE | CHOICE...")
        if len(set(choices)) != len(choices) or len(choices) > 16:
            raise ScriptError(f"line {line}: choices must be unique, at most 16")
        if len(question.encode()) > MAX_QUESTION_BYTES or any(
            len(c.encode()) > MAX_CHOICE_BYTES for c in choices
        ):
            raise ScriptError(f"line {line}: question or choice too long")
        return Step("ask", text=question, choices=choices)
    if op == "sleep":
        if rest == "forever":
            return Step("sleep", millis=-1)
        if not _NUMBER.fullmatch(rest) or int(rest) > 600_000:
            raise ScriptError(f"line {line}: sleep MILLISECONDS (at most 600000) or forever")
        return Step("sleep", millis=int(rest))
    if op == "fail":
        code, _, message = rest.partition(" ")
        if not _FAILURE_CODE.fullmatch(code):
            raise ScriptError(f"line {line}: fail CODE [MESSAGE], CODE in [a-z0-9_]")
        text = _unescape(message.strip()) or "the script failed"
        if len(text.encode()) > MAX_FAILURE_MESSAGE_BYTES:
            raise ScriptError(f"line {line}: the failure message exceeds "
                              f"{MAX_FAILURE_MESSAGE_BYTES} bytes")
        return Step("fail", mode=code, text=text)
    if op in ("effect", "crash", "research") and not rest:
        return Step(op)
    if op == "plan":
        return Step("plan", text=_unescape(rest) or "Draft plan")
    raise ScriptError(f"line {line}: unknown step {op!r}")


def is_script(text: str) -> bool:
    return text.split("\n", 1)[0].strip() == HEADER


def parse(text: str) -> list[Step]:
    lines = text.split("\n")
    if lines[0].strip() != HEADER:
        raise ScriptError("line 1: a script starts with 'colossus-script v1'")
    steps: list[Step] = []
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        count = 1
        match = re.fullmatch(r"repeat\s+([0-9]{1,6})\s+(.+)", line)
        if match:
            count = int(match.group(1))
            line = match.group(2)
            if not 1 <= count <= MAX_STEPS:
                raise ScriptError(f"line {number}: repeat count out of range")
        step = _step(line, number)
        if len(steps) + count > MAX_STEPS:
            raise ScriptError(f"line {number}: the script has more than {MAX_STEPS} steps")
        steps.extend([step] * count)
    return steps
