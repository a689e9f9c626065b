"""Logging for the worker process: its own loggers at the chosen level, secrets redacted.

Levels apply to the ``colossus_reference_worker`` loggers only. Libraries stay at
WARNING whatever ``--log-level`` says: at DEBUG the HTTP/2 header decoder logs
every header it decodes, ``authorization`` included. The formatter then redacts
anything shaped like a bearer from every line it writes (messages, arguments and
tracebacks alike), in case a future log call forgets.
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import IO, Any

_PACKAGE = "colossus_reference_worker"
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
REDACTED = "[redacted]"
# An issued bearer anywhere, and whatever follows the Bearer scheme name.
_SECRETS = (
    re.compile(r"cb1_[A-Za-z0-9_-]+"),
    re.compile(r"(?i)(?<=bearer)(\s+|%20)[\x21-\x7e]+"),
)


def redact(text: str) -> str:
    """``text`` with every bearer-shaped substring replaced."""
    text = _SECRETS[0].sub(REDACTED, text)
    return _SECRETS[1].sub(" " + REDACTED, text)


class RedactingFormatter(logging.Formatter):
    """A formatter whose output never contains a bearer-shaped string."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object per line for machines, redacted like the text lines.

    A log call may pass ``extra={"fields": {...}}``; those keys join the object.
    """

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
                    + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update({k: v for k, v in fields.items() if k not in entry})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        # Redacted value by value, so the line stays valid JSON.
        return json.dumps({k: redact(v) if isinstance(v, str) else v for k, v in entry.items()},
                          default=lambda v: redact(str(v)))


def configure(level: str, stream: IO[str], fmt: str = "text") -> None:
    """Send log lines to ``stream``: the worker's from ``level``, libraries' from WARNING.

    ``fmt`` is ``text`` (for people) or ``json`` (one object per line).
    """
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if fmt == "json" else RedactingFormatter(_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger(_PACKAGE).setLevel(level)
