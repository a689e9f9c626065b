"""Worker configuration: where state lives, how the worker is placed, its limits."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

API_PACKAGE = "colossus.api.v1alpha1"
API_VERSION = "v1alpha1"
API_MAJOR = 1

SCOPES = (
    "runs:execute",
    "runs:read",
    "runs:control",
    "prompts:respond",
    "approvals:respond",
    "artifacts:read",
    "artifacts:write",
)

DEFAULT_CAPABILITIES = ("artifacts", "attachments.text", "delegation", "plans.continue", "research")
IMAGE_INPUT_CAPABILITY = "attachments.image_input"


@dataclass(kw_only=True)
class Limits:
    """Every limit the worker enforces and advertises (W11). Values are inclusive."""

    max_active_runs: int = 32
    max_active_runs_per_application: int = 8
    create_rate_per_second: int = 4
    create_rate_burst: int = 16
    create_rate_per_application_per_second: int = 1
    create_rate_per_application_burst: int = 4
    max_watches: int = 64
    max_watches_per_application: int = 8
    max_concurrent_list_runs: int = 4
    max_concurrent_list_runs_per_application: int = 1
    max_connections: int = 128
    max_concurrent_streams_per_connection: int = 128
    max_request_bytes: int = 2 * 1024 * 1024
    max_response_bytes: int = 4 * 1024 * 1024
    max_header_bytes: int = 16 * 1024
    max_events_per_run: int = 4096
    reserved_lifecycle_events: int = 3
    max_input_parts: int = 128
    max_input_bytes: int = 1024 * 1024
    max_turns: int = 100
    default_max_turns: int = 20
    max_list_page_size: int = 3
    max_list_status_filters: int = 9
    max_artifact_bytes: int = 64 * 1024 * 1024
    max_artifact_chunk_bytes: int = 256 * 1024
    handshake_timeout_seconds: float = 5.0
    max_connection_age_seconds: float = 900.0
    # Not advertised: internal bounds of one ListRuns call (W9).
    list_scan_budget: int = 64
    list_batch_size: int = 8
    # Largest total of released output text per run.
    max_output_bytes: int = 1024 * 1024
    # Authenticated requests whose message is being read and decoded at once.
    decode_permits: int = 8
    decode_permits_per_application: int = 2
    # Time allowed to receive and decode one request message.
    request_setup_timeout_seconds: float = 30.0

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    def override(self, name: str, raw: str) -> None:
        """Apply ``name=raw`` from the command line; raises ``ValueError``.

        ``name`` is a field path as ``GetServerInfo`` advertises it (durations in
        seconds, an optional ``s`` suffix allowed). The attribute names of this class
        are still accepted as deprecated aliases for one release.
        """
        attribute = ADVERTISED_LIMITS.get(name, name if name in self.names() else None)
        if attribute is None:
            raise ValueError(f"unknown limit {name!r}; valid names (as GetServerInfo "
                             f"advertises them): {', '.join(ADVERTISED_LIMITS)}")
        current = getattr(self, attribute)
        try:
            if isinstance(current, float):
                value: float | int = float(raw.removesuffix("s"))
            else:
                value = int(raw)
        except ValueError:
            kind = "a number of seconds" if isinstance(current, float) else "an integer"
            raise ValueError(f"limit {name!r} expects {kind}, got {raw!r}") from None
        if not value > 0 or value == float("inf"):
            raise ValueError(f"limit {name!r} must be positive and finite, got {raw!r}")
        low, high = _BOUNDS.get(attribute, (0, _MAX_SECONDS) if isinstance(current, float)
                                else (1, _MAX_COUNT))
        if not low <= value <= high:
            raise ValueError(f"limit {name!r} must be from {low} to {high}, got {raw!r}")
        setattr(self, attribute, value)

    def check_consistent(self) -> None:
        """Refuse overrides that contradict each other; raises ``ValueError``."""
        if self.default_max_turns > self.max_turns:
            raise ValueError(f"limit 'default_max_turns' ({self.default_max_turns}) must not "
                             f"exceed 'max_turns' ({self.max_turns})")


# What GetServerInfo can advertise: its counts are uint32 (and no gRPC message is longer
# than 2**32 - 1 bytes, its length prefix being 32 bits); a protobuf Duration ends here.
_MAX_COUNT = 2**32 - 1
_MAX_SECONDS = 315_576_000_000
_BOUNDS: dict[str, tuple[int, int]] = {
    # The contract rejects max_turns above 100; an override may only lower it.
    "max_turns": (1, 100),
    "default_max_turns": (1, 100),
    # Closing any run may need three events beyond the ordinary budget: the answer that
    # resolves a pending interaction, CANCELLING, and the terminal event.
    "reserved_lifecycle_events": (3, _MAX_COUNT),
}


_SAME_NAME = (
    "max_active_runs", "max_active_runs_per_application", "max_watches",
    "max_watches_per_application", "max_concurrent_list_runs",
    "max_concurrent_list_runs_per_application", "max_connections",
    "max_concurrent_streams_per_connection", "max_request_bytes", "max_response_bytes",
    "max_header_bytes", "max_events_per_run", "reserved_lifecycle_events", "max_input_parts",
    "max_input_bytes", "max_turns", "default_max_turns", "max_list_page_size",
    "max_list_status_filters", "max_artifact_bytes", "max_artifact_chunk_bytes",
)

ADVERTISED_LIMITS: dict[str, str] = dict(sorted({
    **{name: name for name in _SAME_NAME},
    "create_rate.refill_per_second": "create_rate_per_second",
    "create_rate.burst": "create_rate_burst",
    "create_rate_per_application.refill_per_second": "create_rate_per_application_per_second",
    "create_rate_per_application.burst": "create_rate_per_application_burst",
    "handshake_timeout": "handshake_timeout_seconds",
    "max_connection_age": "max_connection_age_seconds",
}.items()))
"""Every limit name ``--limit`` accepts, spelled as ``GetServerInfo`` advertises it."""


@dataclass(kw_only=True)
class WorkerConfig:
    """How one worker instance runs."""

    state_dir: Path
    """Private folder (0700) holding the TLS seed, keys and the journal."""
    public_api_dir: Path | None = None
    """Folder (0700) for ``endpoint.json`` and ``certificate.pem``; ``None``: none written."""
    host: str = "127.0.0.1"
    """Loopback literal to listen on: ``127.0.0.1`` or ``::1``."""
    port: int = 0
    """TCP port; 0 reuses the previous port when free, else picks one."""
    deployment_mode: str = "SHARED_DAEMON"
    """``SHARED_DAEMON`` or ``SIDECAR``."""
    enable_image_input: bool = False
    """Advertise and accept ``attachments.image_input``."""
    allow_crash_step: bool = False
    """Honour the script step ``crash`` (kills the worker; tests only)."""
    limits: Limits = field(default_factory=Limits)

    def capabilities(self, artifacts_available: bool) -> list[str]:
        caps = [c for c in DEFAULT_CAPABILITIES if c != "artifacts" or artifacts_available]
        if self.enable_image_input:
            caps.append(IMAGE_INPUT_CAPABILITY)
        return sorted(caps)
