"""A case made ready for one execution: its instruction for the client, and its bearers.

The runner turns each catalogue connection into what the client protocol carries
(docs/client-protocol.md): a sidecar gets a fresh state folder and the worker command (a
faulty one when the case says so); a daemon connection gets the worker's public API folder
(or a crafted copy), the pin and instance ID the case's rule asks for, and its bearer, which
travels on the bearer pipe, never in the instruction. ``<uniq>`` becomes a fresh nonce.
"""

from __future__ import annotations

import secrets
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import discovery, scripts
from .catalogue import Case
from .sidecar_probes import sidecar_children, sidecar_record
from .worker import (
    DEFAULT_GRANT,
    ManagedWorker,
    malformed_bearer,
    sidecar_fault_command,
    unknown_bearer,
    worker_command,
)

OTHER_INSTANCE_ID = "conformance-someone-else"


@dataclass
class PreparedCase:
    instruction: dict[str, Any]
    bearers: list[str] = field(repr=False)
    nonce: str = ""


def substitute(value: Any, nonce: str) -> Any:
    """Replaces ``<uniq>`` in every string with a per-execution nonce.

    Workers are shared by every SDK of a run, so values that must be fresh
    for each execution (idempotency keys) carry this token in the catalogue.
    """
    if isinstance(value, str):
        return value.replace("<uniq>", nonce)
    if isinstance(value, list):
        return [substitute(v, nonce) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, nonce) for k, v in value.items()}
    return value


def prepare(case: Case, worker: ManagedWorker | None, timeout: float, scratch: Path) -> PreparedCase:
    """The instruction and bearers of one execution of ``case``; sidecar state folders and
    crafted discovery folders are made in ``scratch``."""
    connections: list[dict[str, Any]] = []
    bearers: list[str] = []
    for conn in case.connections:
        placement = conn.get("placement", "daemon")
        if placement == "sidecar":
            state_dir = Path(tempfile.mkdtemp(prefix="sidecar-", dir=scratch))
            state_dir.chmod(0o700)
            command = worker_command()
            if "sidecar_fault" in conn:
                # The record of starts lives next to the state folder, in the runner's scratch.
                command = sidecar_fault_command(
                    conn["sidecar_fault"], sidecar_record(state_dir), sidecar_children(state_dir)
                )
            connections.append(
                {
                    "name": conn["name"],
                    "placement": "sidecar",
                    "worker_command": command,
                    "application_id": conn.get("app", "sidecar-app"),
                    "grant": conn.get("grant", DEFAULT_GRANT),
                    "state_dir": str(state_dir),
                    "expected_deployment_mode": conn.get("expected_deployment_mode", "SIDECAR"),
                }
            )
            continue
        assert worker is not None, f"{case.id}: a daemon connection needs a worker"
        enrolment = worker.enrolments[conn.get("app", "full")]
        folder = worker.public_api_dir
        descriptor_pin: str | None = worker.certificate_sha256
        if "discovery" in conn:
            crafted = discovery.craft(worker.public_api_dir, conn["discovery"], scratch)
            folder, descriptor_pin = crafted.public_api_dir, crafted.descriptor_pin
        connections.append(
            {
                "name": conn["name"],
                "placement": "daemon",
                "public_api_dir": str(folder),
                "expected_instance_id": _instance(
                    conn.get("expected_instance_id", "genuine"), enrolment.instance_id
                ),
                "expected_certificate_sha256": _pin(
                    conn.get("expected_pin", "genuine"), enrolment.certificate_sha256, descriptor_pin
                ),
                "expected_deployment_mode": conn.get("expected_deployment_mode", "SHARED_DAEMON"),
                "bearer_frame": True,
                **{k: conn[k] for k in ("credential_provider",) if k in conn},
            }
        )
        bearer_kind = conn.get("bearer", "enrolled")
        if bearer_kind == "enrolled":
            bearers.append(enrolment.bearer)
        elif bearer_kind == "unknown":
            bearers.append(unknown_bearer())
        else:
            bearers.append(malformed_bearer(bearer_kind))
    nonce = secrets.token_hex(4)
    steps = [scripts.render_step(substitute(s, nonce)) for s in case.steps]
    instruction = {
        "type": "case",
        "case": case.id,
        "timeout_seconds": timeout,
        "connections": connections,
        "steps": steps,
    }
    return PreparedCase(instruction, bearers, nonce)


def _pin(rule: str, genuine: str, descriptor_pin: str | None) -> str:
    if rule == "genuine":
        return genuine
    if rule == "other":
        return secrets.token_hex(32)
    if rule == "last-digit":
        # Differs from the genuine pin in its last hex digit only: an SDK comparing a
        # prefix (or a truncated hash) accepts it.
        return genuine[:-1] + ("0" if genuine[-1] != "0" else "1")
    if rule == "uppercase":
        return genuine.upper()
    # Spellings a person might paste from a tool's output: the same digest, but not in
    # the one grammar the SDKs take (64 lower-case hex digits), so each must be refused.
    if rule == "sha256-prefix":
        return "sha256:" + genuine
    if rule == "colon-pairs":
        return ":".join(genuine[i : i + 2] for i in range(0, len(genuine), 2))
    if rule == "trailing-newline":
        return genuine + "\n"
    if rule == "short":
        return genuine[:-1]
    if rule == "descriptor":
        return descriptor_pin or genuine
    return rule


def _instance(rule: str, genuine: str) -> str:
    if rule == "genuine":
        return genuine
    if rule == "other":
        return OTHER_INSTANCE_ID
    if rule == "swapcase":
        # The same letters in the other case: an SDK comparing IDs case-insensitively accepts it.
        return genuine.swapcase()
    if rule == "prefix":
        # One character short: an SDK comparing prefixes accepts it.
        return genuine[:-1]
    return rule
