"""Per-RPC scope rules (W4)."""

from __future__ import annotations

from grpclib.const import Status

from .credentials import Principal
from .errors import ApiError

# The scope each method needs; ``None``: any active credential.
METHOD_SCOPES: dict[str, str | None] = {
    "SystemService/GetServerInfo": None,
    "RunService/CreateRun": "runs:execute",
    "RunService/GetRun": "runs:read",
    "RunService/ListRuns": "runs:read",
    "RunService/WatchRun": "runs:read",
    "RunService/CancelRun": "runs:control",
    # RespondInteraction needs prompts:respond or approvals:respond depending on
    # the interaction; the engine checks which once it knows the kind.
    "RunService/RespondInteraction": None,
    "ArtifactService/UploadArtifact": "artifacts:write",
    "ArtifactService/DownloadArtifact": "artifacts:read",
}


def require_scope(principal: Principal, scope: str | None) -> None:
    if scope is not None and scope not in principal.grant.scopes:
        raise ApiError(
            Status.PERMISSION_DENIED,
            "SCOPE_MISSING",
            f"the credential lacks scope {scope}",
            {"scope": scope},
        )
