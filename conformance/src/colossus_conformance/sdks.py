"""Finds the conformance clients: one folder per SDK under ``conformance/clients``.

Each folder holds a ``client.json`` manifest::

    {"sdk": "python",
     "command": ["{python}", "client.py"],
     "build": []}

``command`` starts the client with the folder as working directory; the runner
appends ``--bearer-fd N``. ``{python}`` stands for the runner's interpreter.
``build`` (optional) is run once, in the folder, before the client starts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ClientSpec:
    sdk: str
    folder: Path
    command: tuple[str, ...]
    build: tuple[str, ...] = ()
    env: dict[str, str] | None = None  # the client's whole environment; None inherits the runner's


def _expand(argv: list[str]) -> tuple[str, ...]:
    return tuple(a.replace("{python}", sys.executable) for a in argv)


def discover(clients_dir: Path) -> dict[str, ClientSpec]:
    specs: dict[str, ClientSpec] = {}
    for manifest in sorted(clients_dir.glob("*/client.json")):
        data = json.loads(manifest.read_text())
        spec = ClientSpec(
            sdk=data["sdk"],
            folder=manifest.parent,
            command=_expand(data["command"]),
            build=_expand(data.get("build", [])),
        )
        specs[spec.sdk] = spec
    return specs


def build(spec: ClientSpec) -> None:
    if spec.build:
        subprocess.run(list(spec.build), cwd=spec.folder, check=True)
