"""Composition: state folder, identity, journal, engine, services and listener.

``start_worker`` is the one entry point. The CLI's serve mode and the
sidecar bootstrap both call it; tests may call it in-process.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpclib.protocol import H2Protocol
from grpclib.server import Server

from .config import WorkerConfig
from .credentials import Credential, CredentialBook, Grant
from .discovery import DiscoveryFiles, endpoint_url
from .engine.engine import RunEngine
from .errors import ErrorInfoDetailsCodec, StorageUnavailable
from .handlers.pipeline import ConnectionTable, Pipeline
from .handlers.runs import RunService
from .handlers.system import SystemService
from .http2.not_grpc import WorkerHandler
from .journal import Journal
from .listener import Listener
from .plugins import ServiceContext, load_artifact_plugin
from .state import (
    StateError,
    StateLock,
    ensure_private_dir,
    read_private_file,
    secret_file,
    write_private_file,
)
from .tls import load_identity
from .tls_identity import TlsIdentity
from .wire.codec import BetterprotoCodec
from .worker_hooks import NO_HOOKS, WorkerHooks

log = logging.getLogger(__name__)


class _GrpcServer(Server):
    """grpclib's server with every accepted socket routed through our TLS listener."""

    def __init__(self, handlers: list[Any], listener: Listener) -> None:
        super().__init__(handlers, codec=BetterprotoCodec(),
                         status_details_codec=ErrorInfoDetailsCodec())
        self._listener = listener

    def _protocol_factory(self) -> Any:
        return self._listener.factory(self._h2_protocol)

    def _h2_protocol(self) -> H2Protocol:
        # grpclib's own factory, with the handler that answers spent deadlines and requests
        # that are not POST itself.
        self.__gc_step__()
        handler = WorkerHandler(self._mapping, self._codec, self._status_details_codec,
                                       self.__dispatch__)
        self._handlers.add(handler)
        return H2Protocol(handler, self._config, self._h2_config)

    def stop_accepting(self) -> None:
        """Close the listening socket only; open connections keep being served."""
        if self._server is not None:
            self._server.close()


@dataclass
class Workspace:
    """The opened state folder: lock, identity, journal and credentials."""

    config: WorkerConfig
    lock: StateLock
    identity: TlsIdentity
    journal: Journal
    credentials: CredentialBook

    def close(self) -> None:
        self.journal.close()
        self.lock.release()


def open_workspace(config: WorkerConfig) -> Workspace:
    """Lock and open the state folder (used by serving and by enrolment)."""
    state = config.state_dir
    try:
        ensure_private_dir(state)
        lock = StateLock(state)
        lock.acquire()
    except OSError as exc:
        raise StateError(_unusable(state, exc)) from None
    try:
        identity = load_identity(state, config.host)
        # Every secret before the journal: once it exists, a missing secret is refused.
        journal_key, verifier_key = (secret_file(state / name)
                                     for name in ("journal-key", "verifier-key"))
        journal = Journal(state / "journal.sqlite3", journal_key)
        credentials = CredentialBook(journal, verifier_key)
    except OSError as exc:
        lock.release()
        raise StateError(_unusable(state, exc)) from None
    except StorageUnavailable as exc:
        lock.release()
        raise StateError(f"the state folder is not writable: {exc}") from None
    except BaseException:
        lock.release()
        raise
    return Workspace(config, lock, identity, journal, credentials)


_BACKGROUND: set[asyncio.Task[None]] = set()


def _background(work: Any) -> None:
    task = asyncio.get_running_loop().create_task(work)
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


async def _report_damaged_streams(journal: Journal) -> None:
    """Log every stream that does not end at its sealed head, a batch per loop turn.

    Reads of such a stream fail on their own; this only makes the damage visible
    early. It runs after serving started, so start-up time does not grow with
    the number of streams ever written.
    """
    after: str | None = ""
    try:
        while after is not None:
            damaged, after = journal.damaged_heads(after)
            for stream in damaged:
                log.error("journal stream %s does not end at its sealed head; its reads fail",
                          stream)
            await asyncio.sleep(0)
    except Exception as exc:  # the worker stopped (journal closed) or storage failed
        log.debug("start-up head check ended early: %s", type(exc).__name__)


def _unusable(state: Path, exc: OSError) -> str:
    return f"the state folder is not usable: {exc.filename or state}: {exc.strerror or exc}"


@dataclass
class RunningWorker:
    """A serving worker. Stop it with :meth:`stop`."""

    endpoint: str
    instance_id: str
    certificate_pem: bytes
    certificate_sha256: str
    recovery: dict[str, int]
    _workspace: Workspace
    _engine: RunEngine
    _server: Server
    _listener: Listener
    _discovery: DiscoveryFiles | None
    _plugin: Any = None
    _stopped: asyncio.Event = field(default_factory=asyncio.Event)

    def issue_credential(self, application_id: str, grant: Grant) -> tuple[str, str]:
        """Issue and activate a credential; returns ``(credential_id, bearer)``.

        The pending verifier is committed before the bearer exists outside
        this call, and activation is recorded before it returns. The caller
        owns the bearer from then on and must keep it out of logs and files.
        """
        cred, bearer = self._workspace.credentials.issue(application_id, grant)
        self._workspace.credentials.activate(cred.credential_id)
        return cred.credential_id, bearer

    def revoke_credential(self, credential_id: str) -> Credential:
        return self._workspace.credentials.revoke(credential_id)

    async def stop(self) -> None:
        """Stop serving: withdraw discovery, close connections, keep every run durable."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        # Graceful order: no new connections, then withdraw discovery, then let the
        # engine end watches with UNAVAILABLE and finish its appends.
        if isinstance(self._server, _GrpcServer):
            self._server.stop_accepting()
        if self._discovery is not None:
            self._discovery.withdraw()
        await self._engine.shutdown()
        self._listener.close()
        self._server.close()
        try:
            await asyncio.wait_for(self._server.wait_closed(), 5)
        except asyncio.TimeoutError:
            log.warning("some connections did not close in time")
        if self._plugin is not None:
            self._plugin.close()
        self._workspace.close()

    def abort_connections(self) -> None:
        """After :meth:`stop`, drop the connections it left open, as an exiting process
        would; a worker restarted inside its process (the fault channel) calls it."""
        self._listener.abort_all()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()


def _bind(host: str, wanted: int, state_file: Any) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    candidates = [wanted] if wanted else []
    if not wanted:
        previous = read_private_file(state_file) or b""
        # Only a preference: a damaged file (not a port number) is ignored.
        if previous.isdigit() and 0 < int(previous) < 65536:
            candidates.append(int(previous))
        candidates.append(0)
    last_error: OSError | None = None
    for port in candidates:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            sock.listen(128)
            sock.setblocking(False)
            return sock
        except OSError as exc:
            sock.close()
            last_error = exc
    assert last_error is not None
    raise last_error


async def start_worker(config: WorkerConfig, hooks: WorkerHooks | None = None) -> RunningWorker:
    """Open the state folder, recover runs, listen and publish discovery files."""
    hooks = hooks or NO_HOOKS
    if config.host not in ("127.0.0.1", "::1"):
        raise ValueError("the worker listens on 127.0.0.1 or ::1 only")
    ws = open_workspace(config)
    try:
        connections = ConnectionTable()
        pipeline = Pipeline(config, ws.credentials, hooks, connections)
        ctx = ServiceContext(config, pipeline, ws.journal, config.state_dir)
        plugin = load_artifact_plugin(ctx)
        capabilities = config.capabilities(artifacts_available=plugin is not None)
        engine = RunEngine(
            ws.journal, config, secret_file(config.state_dir / "page-token-key"), capabilities,
            plugin.lookup if plugin is not None else None,
        )
        recovery = engine.recover()
        services: list[Any] = [
            SystemService(pipeline, ws.identity.instance_id, capabilities, plugin is not None),
            RunService(pipeline, engine),
        ]
        if plugin is not None:
            services.append(plugin.servable)
        tls_ctx = hooks.ssl_context_for_listener(
            ws.identity.server_context(),
            certificate_pem=ws.identity.certificate_pem,
            private_key_pem=ws.identity.private_key_pem,
            host=config.host,
        )
        listener = Listener(tls_ctx, config.limits, hooks, connections)
        server = _GrpcServer(services, listener)
        port_file = config.state_dir / "last-port"
        sock = _bind(config.host, config.port, port_file)
        port = sock.getsockname()[1]
        await server.start(sock=sock)
        _background(_report_damaged_streams(ws.journal))
        write_private_file(port_file, str(port).encode())
        endpoint = endpoint_url(config.host, port)
        discovery = None
        if config.public_api_dir is not None:
            discovery = DiscoveryFiles(config.public_api_dir)
            discovery.publish(
                endpoint=endpoint,
                instance_id=ws.identity.instance_id,
                certificate_sha256=ws.identity.certificate_sha256,
                certificate_pem=ws.identity.certificate_pem,
            )
    except BaseException:
        ws.close()
        raise
    log.info("serving %s as %s; state folder %s", endpoint, ws.identity.instance_id,
             config.state_dir, extra={"fields": {
                 "event": "serving", "endpoint": endpoint, "instance_id": ws.identity.instance_id,
                 "state_dir": str(config.state_dir), "deployment_mode": config.deployment_mode}})
    return RunningWorker(
        endpoint=endpoint,
        instance_id=ws.identity.instance_id,
        certificate_pem=ws.identity.certificate_pem,
        certificate_sha256=ws.identity.certificate_sha256,
        recovery=recovery,
        _workspace=ws,
        _engine=engine,
        _server=server,
        _listener=listener,
        _discovery=discovery,
        _plugin=plugin,
    )
