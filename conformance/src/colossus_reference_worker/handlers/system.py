"""SystemService: the worker's self-description."""

from __future__ import annotations

import datetime
from typing import Any

import grpclib.const
from grpclib.server import Stream

from .. import __version__
from .._gen.colossus.api.v1alpha1 import (
    DeploymentMode,
    GetServerInfoRequest,
    GetServerInfoResponse,
    Limits,
    ServerInfo,
    TokenBucket,
)
from ..config import API_MAJOR, API_PACKAGE, API_VERSION
from ..credentials import Principal
from ..wire.codec import read_request
from ..worker_hooks import WorkerHooks
from .pipeline import Pipeline


class SystemService:
    def __init__(self, pipeline: Pipeline, instance_id: str, capabilities: list[str],
                 artifacts_available: bool) -> None:
        self._pipeline = pipeline
        self._instance_id = instance_id
        self._capabilities = capabilities
        self._artifacts = artifacts_available
        hooks = type(pipeline.hooks)
        # The answer never changes while serving; unless hooks may rewrite it
        # (the fault channel does), it is encoded once and sent as bytes.
        self._answer_fixed = (hooks.server_info is WorkerHooks.server_info
                              and hooks.alter_reply is WorkerHooks.alter_reply)
        self._encoded_answer: bytes | None = None

    def server_info(self) -> ServerInfo:
        cfg = self._pipeline.config
        lim = cfg.limits
        limits = Limits(
            max_active_runs=lim.max_active_runs,
            max_active_runs_per_application=lim.max_active_runs_per_application,
            create_rate=TokenBucket(refill_per_second=lim.create_rate_per_second,
                                    burst=lim.create_rate_burst),
            create_rate_per_application=TokenBucket(
                refill_per_second=lim.create_rate_per_application_per_second,
                burst=lim.create_rate_per_application_burst),
            max_watches=lim.max_watches,
            max_watches_per_application=lim.max_watches_per_application,
            max_concurrent_list_runs=lim.max_concurrent_list_runs,
            max_concurrent_list_runs_per_application=lim.max_concurrent_list_runs_per_application,
            max_connections=lim.max_connections,
            max_concurrent_streams_per_connection=lim.max_concurrent_streams_per_connection,
            max_request_bytes=lim.max_request_bytes,
            max_response_bytes=lim.max_response_bytes,
            max_header_bytes=lim.max_header_bytes,
            max_events_per_run=lim.max_events_per_run,
            reserved_lifecycle_events=lim.reserved_lifecycle_events,
            max_input_parts=lim.max_input_parts,
            max_input_bytes=lim.max_input_bytes,
            max_turns=lim.max_turns,
            default_max_turns=lim.default_max_turns,
            max_list_page_size=lim.max_list_page_size,
            max_list_status_filters=lim.max_list_status_filters,
            max_artifact_bytes=lim.max_artifact_bytes if self._artifacts else 0,
            max_artifact_chunk_bytes=lim.max_artifact_chunk_bytes,
            handshake_timeout=datetime.timedelta(seconds=lim.handshake_timeout_seconds),
            max_connection_age=datetime.timedelta(seconds=lim.max_connection_age_seconds),
        )
        info = ServerInfo(
            instance_id=self._instance_id,
            api_package=API_PACKAGE,
            api_version=API_VERSION,
            api_major=API_MAJOR,
            deployment_mode=DeploymentMode[cfg.deployment_mode],
            capabilities=list(self._capabilities),
            limits=limits,
            server_version=f"colossus-reference-worker {__version__}",
        )
        return self._pipeline.hooks.server_info(info)

    def answer(self) -> GetServerInfoResponse | bytes:
        """One call's answer: the encoded bytes when fixed (the codec sends bytes as is)."""
        if not self._answer_fixed:
            return GetServerInfoResponse(server_info=self.server_info())
        if self._encoded_answer is None:
            self._encoded_answer = bytes(GetServerInfoResponse(server_info=self.server_info()))
        return self._encoded_answer

    async def _get_server_info(self, stream: Stream[Any, Any]) -> None:
        max_bytes = self._pipeline.config.limits.max_request_bytes

        def handle(principal: Principal, request: GetServerInfoRequest
                   ) -> GetServerInfoResponse | bytes:
            return self.answer()

        await self._pipeline.unary(
            stream, "SystemService/GetServerInfo",
            lambda s: read_request(s, GetServerInfoRequest, max_bytes), handle,
        )

    def __mapping__(self) -> dict[str, grpclib.const.Handler]:
        return {
            "/colossus.api.v1alpha1.SystemService/GetServerInfo": grpclib.const.Handler(
                self._get_server_info, grpclib.const.Cardinality.UNARY_UNARY,
                GetServerInfoRequest, GetServerInfoResponse,
            ),
        }
