"""``Client`` and ``AsyncClient``: the same surface over grpcio's sync and asyncio APIs."""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType

from ._artifacts import Artifacts, AsyncArtifacts
from ._connection import AsyncConnection, SyncConnection, Target, connect_async, connect_sync
from ._errors import ClientClosedError
from ._models import DeploymentMode, ServerInfo
from ._options import DaemonOptions, SidecarOptions
from ._runs import AsyncRuns, Runs
from ._sidecar import BootstrapReply, SidecarSupervisor
from ._transport._descriptor import discover


def _daemon_target(options: DaemonOptions) -> Target:
    found = discover(
        options.public_api_dir,
        expected_instance_id=options.expected_instance_id,
        expected_certificate_sha256=options.expected_certificate_sha256,
    )
    return Target(
        endpoint=found.descriptor.endpoint,
        certificate=found.certificate,
        expected_instance_id=options.expected_instance_id,
        expected_pin=options.expected_certificate_sha256,
        expected_mode=options.expected_deployment_mode,
    )


def _sidecar_target(reply: BootstrapReply) -> Target:
    # The bootstrap pipe is the trust root of a sidecar: the reply names the identity.
    return Target(
        endpoint=reply.endpoint,
        certificate=reply.certificate,
        expected_instance_id=reply.instance_id,
        expected_pin=reply.certificate.sha256,
        expected_mode=DeploymentMode.SIDECAR,
    )


# --- backends: where the current connection comes from ----------------------------------


class _SyncDaemonBackend:
    def __init__(self, connection: SyncConnection) -> None:
        self._connection: SyncConnection | None = connection

    def connection(self) -> SyncConnection:
        if self._connection is None:
            raise ClientClosedError("the client is closed")
        return self._connection

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


class _SyncSidecarBackend:
    def __init__(self, supervisor: SidecarSupervisor, options: SidecarOptions) -> None:
        self._supervisor = supervisor
        self._options = options
        self._lock = threading.Lock()
        self._closed = False
        process = supervisor.start()
        self._connection = connect_sync(
            _sidecar_target(process.reply), process.reply.bearer, options
        )

    def connection(self) -> SyncConnection:
        if self._closed:
            raise ClientClosedError("the client is closed")
        if self._supervisor.needs_restart():
            with self._lock:
                if self._supervisor.needs_restart():
                    self._connection.close()
                    process = self._supervisor.restart()
                    self._connection = connect_sync(
                        _sidecar_target(process.reply), process.reply.bearer, self._options
                    )
        return self._connection

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._connection.close()
            self._supervisor.close()


class _AsyncDaemonBackend:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection: AsyncConnection | None = connection

    async def connection(self) -> AsyncConnection:
        if self._connection is None:
            raise ClientClosedError("the client is closed")
        return self._connection

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()


class _AsyncSidecarBackend:
    def __init__(
        self, supervisor: SidecarSupervisor, options: SidecarOptions, connection: AsyncConnection
    ) -> None:
        self._supervisor = supervisor
        self._options = options
        self._lock = asyncio.Lock()
        self._closed = False
        self._connection = connection

    @classmethod
    async def start(cls, options: SidecarOptions) -> _AsyncSidecarBackend:
        supervisor = await asyncio.to_thread(SidecarSupervisor, options)
        try:
            process = await asyncio.to_thread(supervisor.start)
            connection = await connect_async(
                _sidecar_target(process.reply), process.reply.bearer, options
            )
        except BaseException:
            await asyncio.to_thread(supervisor.close)
            raise
        return cls(supervisor, options, connection)

    async def connection(self) -> AsyncConnection:
        if self._closed:
            raise ClientClosedError("the client is closed")
        if self._supervisor.needs_restart():
            async with self._lock:
                if self._supervisor.needs_restart():
                    await self._connection.close()
                    process = await asyncio.to_thread(self._supervisor.restart)
                    self._connection = await connect_async(
                        _sidecar_target(process.reply), process.reply.bearer, self._options
                    )
        return self._connection

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._connection.close()
        await asyncio.to_thread(self._supervisor.close)


# --- clients ----------------------------------------------------------------------------


class Client:
    """A connected, verified sync client. Create it with :meth:`connect` (daemon) or
    :meth:`start_sidecar`; close it with :meth:`close` or a ``with`` block."""

    def __init__(
        self,
        backend: _SyncDaemonBackend | _SyncSidecarBackend,
        options: DaemonOptions | SidecarOptions,
    ) -> None:
        self._backend = backend
        self.runs = Runs(backend, options.retry)
        """Run operations."""
        self.artifacts = Artifacts(backend)
        """Artifact upload and download (needs the ``artifacts`` capability)."""

    @classmethod
    def connect(cls, options: DaemonOptions) -> Client:
        """Connects to a shared daemon after every trust check in section C passed."""
        connection = connect_sync(_daemon_target(options), options.credentials, options)
        return cls(_SyncDaemonBackend(connection), options)

    @classmethod
    def start_sidecar(cls, options: SidecarOptions) -> Client:
        """Starts a private worker, bootstraps it and connects to it."""
        supervisor = SidecarSupervisor(options)
        try:
            backend = _SyncSidecarBackend(supervisor, options)
        except BaseException:
            supervisor.close()
            raise
        return cls(backend, options)

    @property
    def server_info(self) -> ServerInfo:
        """The worker's verified ``GetServerInfo`` answer."""
        return self._backend.connection().server_info

    def close(self) -> None:
        """Closes the channel; for a sidecar, also stops the worker's process group."""
        self._backend.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self._backend.__class__.__name__.strip('_')})"


class AsyncClient:
    """The asyncio twin of :class:`Client`, with the same shape."""

    def __init__(
        self,
        backend: _AsyncDaemonBackend | _AsyncSidecarBackend,
        options: DaemonOptions | SidecarOptions,
    ) -> None:
        self._backend = backend
        self.runs = AsyncRuns(backend, options.retry)
        """Run operations."""
        self.artifacts = AsyncArtifacts(backend)
        """Artifact upload and download (needs the ``artifacts`` capability)."""

    @classmethod
    async def connect(cls, options: DaemonOptions) -> AsyncClient:
        """See :meth:`Client.connect`."""
        target = await asyncio.to_thread(_daemon_target, options)
        connection = await connect_async(target, options.credentials, options)
        return cls(_AsyncDaemonBackend(connection), options)

    @classmethod
    async def start_sidecar(cls, options: SidecarOptions) -> AsyncClient:
        """See :meth:`Client.start_sidecar`."""
        return cls(await _AsyncSidecarBackend.start(options), options)

    @property
    def server_info(self) -> ServerInfo:
        """The worker's verified ``GetServerInfo`` answer."""
        connection = self._backend._connection
        if connection is None:
            raise ClientClosedError("the client is closed")
        return connection.server_info

    async def close(self) -> None:
        """See :meth:`Client.close`."""
        await self._backend.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncClient({self._backend.__class__.__name__.strip('_')})"
