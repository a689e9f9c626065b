"""An in-process fake worker for unit tests: a real grpcio server on loopback TLS.

It serves the generated services with scriptable behaviour (watch streams, failures,
pages, artifacts) and records every call with its metadata, so tests can assert what the
SDK sent. Run as a script it is also a fake *sidecar* executable that speaks the bootstrap
protocol on descriptors 3 and 4.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import json
import os
import stat
import struct
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from colossus_agent_client.api.v1alpha1 import (
    artifacts_pb2,
    artifacts_pb2_grpc,
    run_service_pb2,
    run_service_pb2_grpc,
    runs_pb2,
    system_pb2,
    system_pb2_grpc,
)
from colossus_agent_client.testing._leaf import TestLeaf as Leaf

BEARER = "cb1_" + "Q" * 20 + "-secret-bearer-value-xyz"


class CountingProvider:
    """A credential provider that counts how often the SDK asked it for the bearer."""

    def __init__(self) -> None:
        self.calls = 0

    def load_bearer(self) -> str:
        self.calls += 1
        return BEARER


INSTANCE_ID = "inst_fake_1"


def make_leaf(
    *,
    ca: bool = False,
    ip: str = "127.0.0.1",
    curve: ec.EllipticCurve | None = None,
    issuer: tuple[Any, Any] | None = None,
) -> Leaf:
    key = ec.generate_private_key(curve or ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "colossus-test")])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer[0].subject if issuer else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]), critical=False
        )
    )
    signer = issuer[1] if issuer else key
    cert = builder.sign(signer, hashes.SHA256())
    return Leaf(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        der=cert.public_bytes(serialization.Encoding.DER),
    )


def status_details(
    code: grpc.StatusCode,
    reason: str,
    metadata: dict[str, str] | None = None,
    domain: str = "colossus.api.v1alpha1",
) -> bytes:
    info = error_details_pb2.ErrorInfo(domain=domain, reason=reason, metadata=metadata or {})
    detail = any_pb2.Any()
    detail.Pack(info)
    blob: bytes = status_pb2.Status(
        code=code.value[0], message=reason, details=[detail]
    ).SerializeToString()
    return blob


def abort(
    context: grpc.ServicerContext,
    code: grpc.StatusCode,
    reason: str | None,
    metadata: dict[str, str] | None = None,
) -> None:
    if reason:
        context.set_trailing_metadata(
            (("grpc-status-details-bin", status_details(code, reason, metadata)),)
        )
    context.abort(code, reason or code.name)


def limits(**overrides: Any) -> system_pb2.Limits:
    values: dict[str, Any] = dict(
        max_active_runs=32,
        max_active_runs_per_application=8,
        create_rate=system_pb2.TokenBucket(refill_per_second=4, burst=16),
        create_rate_per_application=system_pb2.TokenBucket(refill_per_second=1, burst=4),
        max_watches=64,
        max_watches_per_application=8,
        max_concurrent_list_runs=4,
        max_concurrent_list_runs_per_application=1,
        max_connections=128,
        max_concurrent_streams_per_connection=128,
        max_request_bytes=2 * 1024 * 1024,
        max_response_bytes=4 * 1024 * 1024,
        max_header_bytes=16 * 1024,
        max_events_per_run=4096,
        reserved_lifecycle_events=3,
        max_input_parts=128,
        max_input_bytes=1024 * 1024,
        max_turns=100,
        default_max_turns=20,
        max_list_page_size=3,
        max_list_status_filters=9,
        max_artifact_bytes=1024 * 1024,
        max_artifact_chunk_bytes=16 * 1024,
    )
    values.update(overrides)
    return system_pb2.Limits(**values)


def make_run(
    run_id: str = "run_1",
    status: int = runs_pb2.RUN_STATUS_RUNNING,
    last_sequence: int = 0,
    key: str = "",
) -> runs_pb2.Run:
    return runs_pb2.Run(
        run_id=run_id,
        session_id="sess_1",
        mode=runs_pb2.RUN_MODE_EXECUTE,
        role="default",
        status=runs_pb2.RunStatus.ValueType(status),
        last_sequence=last_sequence,
        idempotency_key=key,
        max_turns=20,
    )


def output_event(run_id: str, sequence: int, text: str = "") -> runs_pb2.RunEvent:
    return runs_pb2.RunEvent(
        run_id=run_id,
        sequence=sequence,
        output_delta=runs_pb2.OutputDelta(text=text or f"chunk {sequence}"),
    )


def terminal_event(run_id: str, sequence: int) -> runs_pb2.RunEvent:
    return runs_pb2.RunEvent(
        run_id=run_id,
        sequence=sequence,
        terminated=runs_pb2.RunTerminated(
            status=runs_pb2.RUN_STATUS_SUCCEEDED, result=runs_pb2.RunResult(output_text="done")
        ),
    )


# A stream script is a list of steps: ("event", RunEvent) | ("fail", code, reason)
# | ("close",) | ("stall", seconds). A missing script serves `events` after the cursor.
Step = tuple[Any, ...]


@dataclass
class Behaviour:
    server_info: dict[str, Any] = field(default_factory=dict)
    capabilities: list[str] = field(
        default_factory=lambda: ["artifacts", "plans.continue", "research"]
    )
    limits: dict[str, Any] = field(default_factory=dict)
    runs: dict[str, runs_pb2.Run] = field(default_factory=dict)
    events: dict[str, list[runs_pb2.RunEvent]] = field(default_factory=dict)
    watch_scripts: list[list[Step]] = field(default_factory=list)
    fail: dict[str, list[tuple[grpc.StatusCode, str | None]]] = field(default_factory=dict)
    pages: list[tuple[list[str], str]] = field(default_factory=list)
    artifacts: dict[str, tuple[artifacts_pb2.Artifact, bytes]] = field(default_factory=dict)
    tamper_download: str | None = None
    delay: dict[str, float] = field(default_factory=dict)
    on_call: Any = None
    synthetic_events: int = 0
    deployment_mode: int = system_pb2.DEPLOYMENT_MODE_SHARED_DAEMON


class FakeWorker(
    system_pb2_grpc.SystemServiceServicer,
    run_service_pb2_grpc.RunServiceServicer,
    artifacts_pb2_grpc.ArtifactServiceServicer,
):
    def __init__(self, leaf: Leaf | None = None, behaviour: Behaviour | None = None) -> None:
        self.leaf = leaf or make_leaf()
        self.b = behaviour or Behaviour()
        self.calls: list[tuple[str, Any, dict[str, str]]] = []
        self.cancelled_watches = 0
        self._lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
        system_pb2_grpc.add_SystemServiceServicer_to_server(self, self.server)
        run_service_pb2_grpc.add_RunServiceServicer_to_server(self, self.server)
        artifacts_pb2_grpc.add_ArtifactServiceServicer_to_server(self, self.server)
        creds = grpc.ssl_server_credentials([(self.leaf.key_pem, self.leaf.cert_pem)])
        self.port = self.server.add_secure_port("127.0.0.1:0", creds)

    # --- lifecycle ---------------------------------------------------------------------
    def start(self) -> FakeWorker:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop(grace=None)

    @property
    def endpoint(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def write_discovery(self, directory: Path, **override: Any) -> Path:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(directory, 0o700)
        descriptor = {
            "endpoint": self.endpoint,
            "instance_id": INSTANCE_ID,
            "pid": os.getpid(),
            "api_version": "v1alpha1",
            "certificate_sha256": self.leaf.sha256,
        }
        descriptor.update(override)
        for name, data in (
            ("endpoint.json", json.dumps(descriptor).encode()),
            ("certificate.pem", self.leaf.cert_pem),
        ):
            path = directory / name
            path.write_bytes(data)
            os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
        return directory

    # --- helpers -----------------------------------------------------------------------
    def _record(self, method: str, request: Any, context: grpc.ServicerContext) -> None:
        md = {k: v for k, v in context.invocation_metadata() if isinstance(v, str)}
        with self._lock:
            self.calls.append((method, request, md))
        if md.get("authorization") != f"Bearer {BEARER}":
            abort(context, grpc.StatusCode.UNAUTHENTICATED, "CREDENTIAL_INVALID")
        if self.b.on_call is not None:
            self.b.on_call(method)
        time.sleep(self.b.delay.get(method, 0.0))
        queue = self.b.fail.get(method)
        if queue:
            code, reason = queue.pop(0)
            abort(context, code, reason)

    def _count_cancelled_watch(self) -> None:
        with self._lock:
            self.cancelled_watches += 1

    def methods(self) -> list[str]:
        return [c[0] for c in self.calls]

    # --- SystemService -----------------------------------------------------------------
    def GetServerInfo(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._record("GetServerInfo", request, context)
        values: dict[str, Any] = dict(
            instance_id=INSTANCE_ID,
            api_package="colossus.api.v1alpha1",
            api_version="v1alpha1",
            api_major=1,
            deployment_mode=self.b.deployment_mode,
            capabilities=self.b.capabilities,
            limits=limits(**self.b.limits),
            server_version="fake-1",
        )
        values.update(self.b.server_info)
        return system_pb2.GetServerInfoResponse(server_info=system_pb2.ServerInfo(**values))

    # --- RunService --------------------------------------------------------------------
    def CreateRun(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._record("CreateRun", request, context)
        for run in self.b.runs.values():
            if run.idempotency_key == request.idempotency_key:
                return run_service_pb2.CreateRunResponse(run=run, replayed=True)
        run = make_run(
            f"run_{len(self.b.runs) + 1}",
            status=runs_pb2.RUN_STATUS_QUEUED,
            key=request.idempotency_key,
        )
        self.b.runs[run.run_id] = run
        return run_service_pb2.CreateRunResponse(run=run, replayed=False)

    def GetRun(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._record("GetRun", request, context)
        run = self.b.runs.get(request.run_id)
        if run is None:
            abort(context, grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND")
        return run_service_pb2.GetRunResponse(run=run)

    def ListRuns(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._record("ListRuns", request, context)
        index = int(request.page_token or "0")
        ids, token = self.b.pages[index]
        return run_service_pb2.ListRunsResponse(
            runs=[make_run(i) for i in ids], next_page_token=token
        )

    def WatchRun(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        self._record("WatchRun", request, context)
        if self.b.synthetic_events:
            for seq in range(request.after_sequence + 1, self.b.synthetic_events):
                yield run_service_pb2.WatchRunResponse(event=output_event(request.run_id, seq))
            yield run_service_pb2.WatchRunResponse(
                event=terminal_event(request.run_id, self.b.synthetic_events)
            )
            return
        if self.b.watch_scripts:
            script = self.b.watch_scripts.pop(0)
        else:
            script = [
                ("event", e)
                for e in self.b.events.get(request.run_id, [])
                if e.sequence > request.after_sequence
            ]
        # A stream that holds never ends by itself, so its end is the client's cancellation,
        # whether it came during the hold or while an event was still being sent.
        holds = any(step[0] == "hold" for step in script)
        if holds and not context.add_callback(self._count_cancelled_watch):
            self._count_cancelled_watch()
        for step in script:
            if step[0] == "event":
                yield run_service_pb2.WatchRunResponse(event=step[1])
            elif step[0] == "fail":
                abort(context, step[1], step[2])
            elif step[0] == "close":
                return
            elif step[0] == "stall":
                time.sleep(step[1])
            elif step[0] == "hold":
                # Until the client cancels (or the server stops).
                ended = threading.Event()
                if not context.add_callback(ended.set):  # False: the call already ended
                    ended.set()
                ended.wait()

    def CancelRun(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._record("CancelRun", request, context)
        run = self.b.runs.get(request.run_id) or make_run(request.run_id)
        run.status = runs_pb2.RUN_STATUS_CANCELLING
        return run_service_pb2.CancelRunResponse(run=run)

    def RespondInteraction(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._record("RespondInteraction", request, context)
        return run_service_pb2.RespondInteractionResponse(run=make_run(request.run_id))

    # --- ArtifactService ---------------------------------------------------------------
    def UploadArtifact(self, request_iterator: Iterator[Any], context: grpc.ServicerContext) -> Any:
        first = next(request_iterator)
        self._record("UploadArtifact", first, context)
        manifest = first.manifest
        data = b"".join(m.chunk for m in request_iterator)
        if len(data) != manifest.size_bytes or hashlib.sha256(data).hexdigest() != manifest.sha256:
            abort(context, grpc.StatusCode.INVALID_ARGUMENT, "ARTIFACT_INTEGRITY_MISMATCH")
        art = artifacts_pb2.Artifact(
            artifact_id=f"art_{len(self.b.artifacts) + 1}",
            media_type=manifest.media_type,
            size_bytes=manifest.size_bytes,
            sha256=manifest.sha256,
            display_name=manifest.display_name,
        )
        self.b.artifacts[art.artifact_id] = (art, data)
        return artifacts_pb2.UploadArtifactResponse(artifact=art)

    def DownloadArtifact(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        self._record("DownloadArtifact", request, context)
        art, data = self.b.artifacts[request.artifact_id]
        if self.b.tamper_download == "digest":
            data = bytes([data[0] ^ 1]) + data[1:]
        elif self.b.tamper_download == "long":
            data = data + b"x"
        elif self.b.tamper_download == "short":
            data = data[:-1]
        yield artifacts_pb2.DownloadArtifactResponse(artifact=art)
        for i in range(0, len(data), 1000):
            yield artifacts_pb2.DownloadArtifactResponse(chunk=data[i : i + 1000])


# --- fake sidecar executable ------------------------------------------------------------


def _sidecar_main(argv: list[str]) -> int:
    # Chatter on stderr, as real workers log: it must never reach the bootstrap pipe.
    sys.stderr.write("fake sidecar: starting\n")
    sys.stderr.flush()
    mode = next((a.split("=", 1)[1] for a in argv if a.startswith("--fake=")), "ok")
    marker = next((a.split("=", 1)[1] for a in argv if a.startswith("--marker=")), None)
    fd_in, fd_out = (
        int(argv[argv.index("--bootstrap-in-fd") + 1]),
        int(argv[argv.index("--bootstrap-out-fd") + 1]),
    )
    header = os.read(fd_in, 4)
    (length,) = struct.unpack(">I", header)
    request = json.loads(os.read(fd_in, length))
    assert set(request) == {"version", "state_dir", "application_id", "grant"}
    if marker:
        # A grandchild in the same process group, to prove close() ends the whole group.
        pid = os.fork()
        if pid == 0:
            Path(marker).write_text(str(os.getpid()))
            time.sleep(600)
            os._exit(0)
    worker = FakeWorker(
        behaviour=Behaviour(deployment_mode=system_pb2.DEPLOYMENT_MODE_SIDECAR)
    ).start()
    worker.b.events["run_1"] = [output_event("run_1", 1), terminal_event("run_1", 2)]
    worker.b.runs["run_1"] = make_run(
        "run_1", status=runs_pb2.RUN_STATUS_SUCCEEDED, last_sequence=2
    )
    reply: dict[str, Any] = {
        "version": 1,
        "endpoint": worker.endpoint,
        "instance_id": INSTANCE_ID,
        "api_version": "v1alpha1",
        "certificate_sha256": worker.leaf.sha256,
        "certificate_pem": worker.leaf.cert_pem.decode(),
        "credential_id": "cred_1",
        "bearer": BEARER,
    }
    if mode == "bad-pin":
        reply["certificate_sha256"] = "0" * 64
    elif mode == "extra-member":
        reply["extra"] = 1
    elif mode == "error":
        reply = {"version": 1, "error": {"code": "state_dir_invalid", "message": "bad state dir"}}
    elif mode == "bad-bearer":
        reply["bearer"] = "short"
    body = json.dumps(reply).encode()
    os.write(fd_out, struct.pack(">I", len(body)) + body)
    os.close(fd_out)
    if mode in ("error", "bad-pin", "extra-member", "bad-bearer"):
        return 1
    # Each crash-* mode exits while answering its method's first call (across restarts).
    crash_on = {
        "crash-on-read": "GetRun",
        "crash-on-cancel": "CancelRun",
        "crash-on-connect": "GetServerInfo",
    }.get(mode)
    if crash_on is not None:
        state = Path(request["state_dir"])

        def on_call(method: str) -> None:
            with open(state / "calls.log", "a") as log:
                log.write(method + "\n")
            if method == crash_on and not (state / "crashed").exists():
                (state / "crashed").write_text("1")
                os._exit(3)

        worker.b.on_call = on_call
    if mode == "crash-always":
        # Every worker answers the connect's GetServerInfo, then dies on the next call.
        def die_after_hello(method: str) -> None:
            if method != "GetServerInfo":
                os._exit(3)

        worker.b.on_call = die_after_hello
    if mode == "crash-always-on-connect":

        def die(method: str) -> None:
            os._exit(3)

        worker.b.on_call = die
    while os.read(fd_in, 1024):
        pass
    worker.stop()
    return 0


def _serve_main(directory: str, events: int) -> int:
    """Serves one synthetic run of ``events`` events until stdin closes (benchmarks)."""
    worker = FakeWorker(behaviour=Behaviour(synthetic_events=events)).start()
    worker.b.runs["run_bench"] = make_run(
        "run_bench", status=runs_pb2.RUN_STATUS_SUCCEEDED, last_sequence=events
    )
    worker.write_discovery(Path(directory))
    print(
        json.dumps({"instance_id": INSTANCE_ID, "certificate_sha256": worker.leaf.sha256}),
        flush=True,
    )
    sys.stdin.read()
    worker.stop()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        sys.exit(_serve_main(sys.argv[2], int(sys.argv[3])))
    sys.exit(_sidecar_main(sys.argv[1:]))
