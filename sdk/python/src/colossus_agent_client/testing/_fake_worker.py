"""An in-process fake Colossus worker for application unit tests.

It is a real grpcio server on loopback TLS (a throw-away certificate), so the SDK runs
its whole connect sequence against it: discovery files, pin checks, the TLS 1.3
pre-flight, the bearer and ``GetServerInfo``. Runs are scripted: each created run has
already finished with the events you queued, and faults can be injected per call.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent import futures
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from .._credentials import InMemoryCredentialProvider
from .._models import RunStatus
from .._options import DaemonOptions, RetryPolicy
from ..api.v1alpha1 import (
    run_service_pb2,
    run_service_pb2_grpc,
    runs_pb2,
    system_pb2,
    system_pb2_grpc,
)
from ._faults import Fault
from ._leaf import make_test_leaf

INSTANCE_ID = "wkr_fake"
_DOMAIN = "colossus.api.v1alpha1"


def _abort(
    context: grpc.ServicerContext,
    code_name: str,
    reason: str | None,
    retry_delay: float | None = None,
) -> None:
    code = getattr(grpc.StatusCode, code_name)
    if reason:
        detail = any_pb2.Any()
        detail.Pack(error_details_pb2.ErrorInfo(domain=_DOMAIN, reason=reason))
        details = [detail]
        if retry_delay is not None:
            retry = any_pb2.Any()
            info = error_details_pb2.RetryInfo()
            info.retry_delay.FromNanoseconds(round(retry_delay * 1e9))
            retry.Pack(info)
            details.append(retry)
        status = status_pb2.Status(code=code.value[0], message=reason, details=details)
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
    context.abort(code, reason or code_name)


class _Servicer(system_pb2_grpc.SystemServiceServicer, run_service_pb2_grpc.RunServiceServicer):
    def __init__(self, worker: FakeWorker) -> None:
        self.w = worker

    def _enter(self, method: str, context: grpc.ServicerContext) -> Fault | None:
        """Records the call, checks the bearer, and returns a fault meant for it."""
        w = self.w
        headers = dict(context.invocation_metadata())
        with w._lock:
            w.calls.append(method)
            fault = next((f for f in w._faults if f.method == method), None)
            if fault is not None:
                w._faults.remove(fault)
        if headers.get("authorization") != f"Bearer {w._bearer}":
            _abort(context, "UNAUTHENTICATED", "CREDENTIAL_INVALID")
        if fault is not None and fault.kind == "fail":
            _abort(context, fault.code, fault.reason)
        if fault is not None and fault.kind == "rate_limit":
            _abort(context, "RESOURCE_EXHAUSTED", "CREATE_RATE_LIMIT", fault.retry_delay)
        return fault

    def GetServerInfo(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._enter("GetServerInfo", context)
        return system_pb2.GetServerInfoResponse(
            server_info=system_pb2.ServerInfo(
                instance_id=INSTANCE_ID,
                api_package=_DOMAIN,
                api_version="v1alpha1",
                api_major=1,
                deployment_mode=system_pb2.DEPLOYMENT_MODE_SHARED_DAEMON,
                capabilities=list(self.w.capabilities),
                limits=system_pb2.Limits(
                    max_request_bytes=2 * 1024 * 1024,
                    max_response_bytes=4 * 1024 * 1024,
                    max_input_parts=128,
                    max_input_bytes=1024 * 1024,
                    max_turns=100,
                    default_max_turns=20,
                    max_list_page_size=3,
                    max_list_status_filters=9,
                    create_rate=system_pb2.TokenBucket(refill_per_second=4, burst=16),
                    create_rate_per_application=system_pb2.TokenBucket(
                        refill_per_second=1, burst=4
                    ),
                ),
                server_version="colossus_agent_client.testing.FakeWorker",
            )
        )

    def CreateRun(self, request: Any, context: grpc.ServicerContext) -> Any:
        fault = self._enter("CreateRun", context)
        w = self.w
        with w._lock:
            existing = w._by_key.get(request.idempotency_key)
            if existing is not None:
                response = run_service_pb2.CreateRunResponse(run=w._runs[existing], replayed=True)
            else:
                texts, status = w._scripts.pop(0) if w._scripts else ((), RunStatus.SUCCEEDED)
                run_id = w._store_run(texts, status, key=request.idempotency_key)
                response = run_service_pb2.CreateRunResponse(run=w._runs[run_id], replayed=False)
        if fault is not None and fault.kind == "after_commit":
            _abort(context, "UNAVAILABLE", None)
        return response

    def GetRun(self, request: Any, context: grpc.ServicerContext) -> Any:
        fault = self._enter("GetRun", context)
        run = self.w._runs.get(request.run_id)
        if run is None:
            _abort(context, "NOT_FOUND", "RUN_NOT_FOUND")
        if run is not None and fault is not None and fault.kind == "not_started":
            early = runs_pb2.Run()
            early.CopyFrom(run)
            early.status = runs_pb2.RUN_STATUS_QUEUED
            early.last_sequence = 0
            early.ClearField("result")
            return run_service_pb2.GetRunResponse(run=early)
        return run_service_pb2.GetRunResponse(run=run)

    def ListRuns(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._enter("ListRuns", context)
        wanted = set(request.statuses)
        runs = [r for r in reversed(self.w._runs.values()) if not wanted or r.status in wanted]
        start = int(request.page_token or "0")
        size = min(request.page_size or 3, 3)
        page = runs[start : start + size]
        token = str(start + size) if start + size < len(runs) else ""
        return run_service_pb2.ListRunsResponse(runs=page, next_page_token=token)

    def WatchRun(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        fault = self._enter("WatchRun", context)
        events = self.w._events.get(request.run_id)
        if events is None:
            _abort(context, "NOT_FOUND", "RUN_NOT_FOUND")
            return
        pending = [e for e in events if e.sequence > request.after_sequence]
        for index, event in enumerate(pending):
            if fault is not None and index == fault.after_events:
                if fault.kind == "drop":
                    _abort(context, "UNAVAILABLE", None)
                if fault.kind == "gap":
                    continue
                if fault.kind == "replay" and index > 0:
                    yield run_service_pb2.WatchRunResponse(event=pending[0])
            yield run_service_pb2.WatchRunResponse(event=event)

    def CancelRun(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._enter("CancelRun", context)
        run = self.w._runs.get(request.run_id)
        if run is None:
            _abort(context, "NOT_FOUND", "RUN_NOT_FOUND")
        return run_service_pb2.CancelRunResponse(run=run)

    def RespondInteraction(self, request: Any, context: grpc.ServicerContext) -> Any:
        # Scripted runs have already ended, so there is never a pending interaction.
        self._enter("RespondInteraction", context)
        _abort(context, "NOT_FOUND", "INTERACTION_NOT_FOUND")


class FakeWorker:
    """A scripted stand-in for a Colossus worker, for your application's unit tests.

    Use it as a context manager and connect with :meth:`daemon_options`::

        import colossus_agent_client as colossus

        with FakeWorker() as worker:
            worker.script(["Hello", ", world"])
            with colossus.Client.connect(worker.daemon_options()) as client:
                run = client.runs.create("hi").run
                text = "".join(e.payload.text for e in client.runs.watch(run.run_id)
                               if isinstance(e.payload, colossus.OutputDelta))

    Every run it creates has already ended: its events are the queued output texts plus
    a terminal event with the queued status. ``calls`` lists the RPCs received, in order.
    It serves the system and run services (no artifacts).

    Args:
        capabilities: the optional features it advertises in ``GetServerInfo``.

    Attributes:
        capabilities: as given.
        calls: the RPC method names received, in order (for assertions).
        port: the loopback port it listens on.
    """

    def __init__(self, *, capabilities: Sequence[str] = ("plans.continue", "research")) -> None:
        self.capabilities = tuple(capabilities)
        self.calls: list[str] = []
        self._leaf = make_test_leaf()
        self._bearer = "fake-" + secrets.token_urlsafe(32)
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._scripts: list[tuple[tuple[str, ...], RunStatus]] = []
        self._runs: dict[str, runs_pb2.Run] = {}
        self._events: dict[str, list[runs_pb2.RunEvent]] = {}
        self._by_key: dict[str, str] = {}
        self._folder: Path | None = None
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        servicer = _Servicer(self)
        system_pb2_grpc.add_SystemServiceServicer_to_server(servicer, self._server)
        run_service_pb2_grpc.add_RunServiceServicer_to_server(servicer, self._server)
        credentials = grpc.ssl_server_credentials([(self._leaf.key_pem, self._leaf.cert_pem)])
        self.port = self._server.add_secure_port("127.0.0.1:0", credentials)

    # --- lifecycle ------------------------------------------------------------------
    def start(self) -> FakeWorker:
        """Starts serving on ``127.0.0.1:<port>``.

        Returns:
            This worker, so ``worker = FakeWorker().start()`` works.
        """
        self._server.start()
        return self

    def stop(self) -> None:
        """Stops serving and removes the discovery folder."""
        self._server.stop(grace=None)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def __enter__(self) -> FakeWorker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- connecting -----------------------------------------------------------------
    def daemon_options(self, **overrides: Any) -> DaemonOptions:
        """Options that connect to this worker.

        The first call writes its discovery files into a private folder (removed by
        :meth:`stop`).

        Args:
            overrides: :class:`~colossus_agent_client.DaemonOptions` fields to replace (for
                example ``timeout``).

        Returns:
            :class:`~colossus_agent_client.DaemonOptions` with this worker's folder, instance
            ID, pin and bearer, and fast retries.
        """
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="colossus-fake-"))
            os.chmod(self._folder, 0o700)
            descriptor = {
                "endpoint": f"https://127.0.0.1:{self.port}",
                "instance_id": INSTANCE_ID,
                "pid": os.getpid(),
                "api_version": "v1alpha1",
                "certificate_sha256": self._leaf.sha256,
            }
            for name, data in (
                ("endpoint.json", json.dumps(descriptor).encode()),
                ("certificate.pem", self._leaf.cert_pem),
            ):
                fd = os.open(self._folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as file:
                    file.write(data)
        values: dict[str, Any] = {
            "public_api_dir": self._folder,
            "expected_instance_id": INSTANCE_ID,
            "expected_certificate_sha256": self._leaf.sha256,
            "credentials": InMemoryCredentialProvider(self._bearer),
            "retry": RetryPolicy(max_attempts=4, initial_backoff=0.01, max_backoff=0.05),
            "timeout": 10.0,
            "connect_timeout": 10.0,
        }
        values.update(overrides)
        return DaemonOptions(**values)

    # --- scripting ------------------------------------------------------------------
    def script(
        self, outputs: Sequence[str] = (), *, status: RunStatus | str = RunStatus.SUCCEEDED
    ) -> None:
        """Queues what the next created run produces: output texts, then ``status``.

        Args:
            outputs: texts sent as :class:`~colossus_agent_client.OutputDelta` events, in order.
            status: the terminal status (a :class:`~colossus_agent_client.RunStatus` or its name).

        Raises:
            ValueError: ``status`` is not terminal.
        """
        self._scripts.append((tuple(outputs), _terminal(status)))

    def add_run(
        self, outputs: Sequence[str] = (), *, status: RunStatus | str = RunStatus.SUCCEEDED
    ) -> str:
        """Stores an already finished run, as if created earlier (for listing tests).

        Args:
            outputs: texts of its :class:`~colossus_agent_client.OutputDelta` events, in order.
            status: its terminal status (a :class:`~colossus_agent_client.RunStatus` or its name).

        Returns:
            The new run's ID.

        Raises:
            ValueError: ``status`` is not terminal.
        """
        with self._lock:
            return self._store_run(tuple(outputs), _terminal(status), key="")

    def inject(self, *faults: Fault) -> None:
        """Arms faults; each is used once, by the next call it applies to.

        Args:
            faults: :class:`Fault` objects, applied in the order given per method.
        """
        with self._lock:
            self._faults.extend(faults)

    def _store_run(self, texts: tuple[str, ...], status: RunStatus, *, key: str) -> str:
        run_id = f"run_{len(self._runs) + 1}"
        events = [
            runs_pb2.RunEvent(
                run_id=run_id, sequence=i, output_delta=runs_pb2.OutputDelta(text=text)
            )
            for i, text in enumerate(texts, start=1)
        ]
        pb_status = runs_pb2.RunStatus.ValueType(status.value)
        events.append(
            runs_pb2.RunEvent(
                run_id=run_id,
                sequence=len(texts) + 1,
                terminated=runs_pb2.RunTerminated(
                    status=pb_status, result=runs_pb2.RunResult(output_text="".join(texts))
                ),
            )
        )
        self._runs[run_id] = runs_pb2.Run(
            run_id=run_id,
            session_id=f"ses_{len(self._runs) + 1}",
            mode=runs_pb2.RUN_MODE_EXECUTE,
            role="default",
            status=pb_status,
            last_sequence=len(events),
            idempotency_key=key,
            max_turns=20,
            result=runs_pb2.RunResult(output_text="".join(texts)),
        )
        self._events[run_id] = events
        if key:
            self._by_key[key] = run_id
        return run_id


def _terminal(status: RunStatus | str) -> RunStatus:
    from .._coerce import enum_arg  # noqa: PLC0415

    value = enum_arg(status, RunStatus, "status")
    if not value.is_terminal:
        raise ValueError(f"a scripted run must end in a terminal status, not {value.name}")
    return value
