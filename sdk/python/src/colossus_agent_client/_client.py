"""``Client`` and ``AsyncClient``: the same surface over grpcio's sync and asyncio APIs."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import weakref
from collections.abc import Awaitable, Callable, Generator
from pathlib import Path
from types import TracebackType
from typing import Any

from ._artifacts import Artifacts, AsyncArtifacts
from ._connection import (
    DEFAULT,
    AsyncConnection,
    SyncConnection,
    Target,
    connect_async,
    connect_sync,
)
from ._errors import ClientClosedError, ColossusError, SidecarError
from ._models import DeploymentMode, ServerInfo
from ._options import DaemonOptions, RetryPolicy, SidecarOptions
from ._runs import AsyncRuns, Runs
from ._sidecar import SidecarProcess, SidecarSupervisor
from ._sidecar_bootstrap import BootstrapReply
from ._transport._descriptor import discover
from ._watch import AsyncWatch
from ._with_options import AsyncOverride, SyncOverride, option_changes


def _daemon_target(options: DaemonOptions) -> Target:
    found = discover(
        Path(options.public_api_dir),
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


def _current_process(supervisor: SidecarSupervisor) -> SidecarProcess:
    if supervisor.process is None:  # pragma: no cover - start() ran in the constructor
        raise SidecarError("the sidecar worker is not running")
    return supervisor.process


def _exited(process: SidecarProcess) -> Callable[[], bool]:
    """Whether ``process`` exited: a connect to it then ends at once, and the worker is
    replaced like any that exited (S1, S7)."""
    return lambda: not process.alive


class _SyncSidecarBackend:
    def __init__(self, supervisor: SidecarSupervisor, options: SidecarOptions) -> None:
        self._supervisor = supervisor
        self._options = options
        self._lock = threading.Lock()
        self._closed = False
        self._reconnect = False
        process = supervisor.start()
        while True:
            try:
                self._connection = connect_sync(
                    _sidecar_target(process.reply),
                    process.reply.bearer,
                    options,
                    gone=_exited(process),
                )
                break
            except ColossusError:
                # A worker that died while we connected is replaced like any other, within
                # the same budget; any other failure is the caller's to see.
                if not supervisor.died_while_connecting():
                    raise
                process = supervisor.restart()

    def connection(self) -> SyncConnection:
        if self._closed:
            raise ClientClosedError("the client is closed")
        if self._reconnect or self._supervisor.needs_restart():
            with self._lock:
                if self._supervisor.needs_restart():
                    self._connection.close()
                    self._reconnect = True
                    self._supervisor.restart()
                if self._reconnect:
                    # Also after a restart whose connect failed: never hand out the closed one.
                    process = _current_process(self._supervisor)
                    self._connection = connect_sync(
                        _sidecar_target(process.reply),
                        process.reply.bearer,
                        self._options,
                        gone=_exited(process),
                    )
                    self._reconnect = False
        return self._connection

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._connection.close()
            self._supervisor.close()


async def _close_watches(watches: weakref.WeakSet[AsyncWatch]) -> None:
    """Closes the watches still open: a suspended one would otherwise keep its cancelled
    call, and with it grpc.aio's poller thread, until the caller dropped it."""
    for watch in list(watches):
        await watch.close()


class _AsyncDaemonBackend:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection: AsyncConnection | None = connection
        self.watches: weakref.WeakSet[AsyncWatch] = weakref.WeakSet()

    async def connection(self) -> AsyncConnection:
        if self._connection is None:
            raise ClientClosedError("the client is closed")
        return self._connection

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await _close_watches(self.watches)
            await connection.close()


class _AsyncSidecarBackend:
    def __init__(
        self, supervisor: SidecarSupervisor, options: SidecarOptions, connection: AsyncConnection
    ) -> None:
        self._supervisor = supervisor
        self._options = options
        self._lock = asyncio.Lock()
        self._closed = False
        self._reconnect = False
        self._connection = connection
        self.watches: weakref.WeakSet[AsyncWatch] = weakref.WeakSet()

    @classmethod
    async def start(cls, options: SidecarOptions) -> _AsyncSidecarBackend:
        supervisor = await asyncio.to_thread(SidecarSupervisor, options)
        try:
            process = await asyncio.to_thread(supervisor.start)
            while True:
                try:
                    connection = await connect_async(
                        _sidecar_target(process.reply),
                        process.reply.bearer,
                        options,
                        gone=_exited(process),
                    )
                    break
                except ColossusError:
                    # As in the sync backend: a worker that died while we connected is replaced.
                    if not await asyncio.to_thread(supervisor.died_while_connecting):
                        raise
                    process = await asyncio.to_thread(supervisor.restart)
        except BaseException:
            await asyncio.to_thread(supervisor.close)
            raise
        return cls(supervisor, options, connection)

    async def connection(self) -> AsyncConnection:
        if self._closed:
            raise ClientClosedError("the client is closed")
        if self._reconnect or self._supervisor.needs_restart():
            async with self._lock:
                if self._supervisor.needs_restart():
                    await self._connection.close()
                    self._reconnect = True
                    await asyncio.to_thread(self._supervisor.restart)
                if self._reconnect:
                    # Also after a restart whose connect failed: never hand out the closed one.
                    process = _current_process(self._supervisor)
                    self._connection = await connect_async(
                        _sidecar_target(process.reply),
                        process.reply.bearer,
                        self._options,
                        gone=_exited(process),
                    )
                    self._reconnect = False
        return self._connection

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await _close_watches(self.watches)
        await self._connection.close()
        await asyncio.to_thread(self._supervisor.close)


# --- clients ----------------------------------------------------------------------------


class Client:
    """A connected, verified sync client.

    Create it with :meth:`connect` (an installed worker) or :meth:`start_sidecar` (a
    private worker this process starts), never with the constructor; close it with
    :meth:`close` or a ``with`` block. One client may be shared by many threads.

    Attributes:
        runs: run operations (:class:`Runs`): create, get, list, watch, cancel, respond.
        artifacts: artifact upload and download (:class:`Artifacts`); needs the worker's
            ``artifacts`` capability.
    """

    def __init__(
        self,
        backend: _SyncDaemonBackend | _SyncSidecarBackend | SyncOverride,
        options: DaemonOptions | SidecarOptions,
    ) -> None:
        self._backend = backend
        self._options = options
        self.runs = Runs(backend, options.retry)
        """Run operations."""
        self.artifacts = Artifacts(backend)
        """Artifact upload and download (needs the ``artifacts`` capability)."""

    @classmethod
    def connect(cls, options: DaemonOptions) -> Client:
        """Connects to an installed worker (daemon placement) and verifies it.

        The discovery files, the expected identity, a TLS 1.3 handshake with the pinned
        certificate and the worker's ``GetServerInfo`` answer are all checked, in that
        order, before the bearer is used for anything else. Blocks for at most about
        ``options.connect_timeout`` seconds (plus read retries of ``GetServerInfo``).

        Args:
            options: where the worker's discovery files are, the identity enrolment
                printed, the credential provider, and the client's defaults.

        Returns:
            A connected :class:`Client`; close it when done.

        Raises:
            DescriptorError, CertificateError, PinMismatchError, TlsPolicyError,
            IncompatibleServerError: a trust check failed; the bearer was not sent (or, for
                the last one, the worker is not the expected one).
            CredentialError: the credential provider failed or returned a malformed bearer.
            TransportError: the worker could not be reached.
        """
        connection = connect_sync(_daemon_target(options), options.credentials, options)
        return cls(_SyncDaemonBackend(connection), options)

    @classmethod
    def start_sidecar(cls, options: SidecarOptions) -> Client:
        """Starts a private worker (sidecar placement), bootstraps it and connects to it.

        The worker runs in its own process group and is stopped by :meth:`close`. If it
        exits unexpectedly, the next call restarts it (at most ``options.max_restarts``
        times over the client's life).

        Args:
            options: the worker executable, the application and grants to issue the
                one-use bearer for, and the client's defaults.

        Returns:
            A connected :class:`Client` that owns the worker process.

        Raises:
            SidecarError: the worker could not be started or sent an invalid reply.
            TrustError, TransportError: as for :meth:`connect`.
        """
        supervisor = SidecarSupervisor(options)
        try:
            backend = _SyncSidecarBackend(supervisor, options)
        except BaseException:
            supervisor.close()
            raise
        return cls(backend, options)

    @property
    def server_info(self) -> ServerInfo:
        """The worker's verified ``GetServerInfo`` answer: identity, capabilities, limits.

        Raises:
            ClientClosedError: the client was closed.
        """
        return self._backend.connection().server_info

    def with_options(
        self, *, timeout: float | object | None = DEFAULT, retry: RetryPolicy | None = None
    ) -> Client:
        """A client with other defaults for per-call ``timeout`` and read ``retry``.

        It shares this client's connection (and sidecar): closing either closes both.
        Omitted arguments keep this client's values.

        Args:
            timeout: seconds each call may take, or ``None`` for no deadline.
            retry: the policy for reads and watch reconnects.

        Returns:
            A new :class:`Client` view over the same connection.

        Raises:
            TypeError: ``timeout`` is not a positive number or ``None``, or ``retry`` is
                not a :class:`RetryPolicy`.
        """
        changes = option_changes(timeout, retry)
        options = dataclasses.replace(self._options, **changes)
        return Client(SyncOverride(self._backend, changes), options)

    def close(self) -> None:
        """Closes the channel; for a sidecar, also stops the worker's process group.

        Calling it again does nothing. Any later call raises :class:`ClientClosedError`.
        """
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
    """The asyncio twin of :class:`Client`, with the same shape.

    Create it with ``await AsyncClient.connect(options)`` or
    ``async with AsyncClient.connect(options) as client:`` (likewise
    :meth:`start_sidecar`). Use it from one event loop.

    Attributes:
        runs: run operations (:class:`AsyncRuns`).
        artifacts: artifact upload and download (:class:`AsyncArtifacts`).
    """

    def __init__(
        self,
        backend: _AsyncDaemonBackend | _AsyncSidecarBackend | AsyncOverride,
        options: DaemonOptions | SidecarOptions,
    ) -> None:
        self._backend = backend
        self._options = options
        self.runs = AsyncRuns(backend, options.retry)
        """Run operations."""
        self.artifacts = AsyncArtifacts(backend)
        """Artifact upload and download (needs the ``artifacts`` capability)."""

    @classmethod
    def connect(cls, options: DaemonOptions) -> Connecting:
        """See :meth:`Client.connect`: same options, checks and errors.

        Returns:
            A ``Connecting`` object: ``async with AsyncClient.connect(options) as client``
            closes the client at the end of the block; ``client = await
            AsyncClient.connect(options)`` leaves closing to you (``await client.close()``).
        """
        return Connecting(cls._connect(options))

    @classmethod
    async def _connect(cls, options: DaemonOptions) -> AsyncClient:
        target = await asyncio.to_thread(_daemon_target, options)
        connection = await connect_async(target, options.credentials, options)
        return cls(_AsyncDaemonBackend(connection), options)

    @classmethod
    def start_sidecar(cls, options: SidecarOptions) -> Connecting:
        """See :meth:`Client.start_sidecar`: same options, behaviour and errors.

        Returns:
            A ``Connecting`` object, awaitable and usable in ``async with``.
        """
        return Connecting(cls._start_sidecar(options))

    @classmethod
    async def _start_sidecar(cls, options: SidecarOptions) -> AsyncClient:
        return cls(await _AsyncSidecarBackend.start(options), options)

    def with_options(
        self, *, timeout: float | object | None = DEFAULT, retry: RetryPolicy | None = None
    ) -> AsyncClient:
        """See :meth:`Client.with_options`."""
        changes = option_changes(timeout, retry)
        options = dataclasses.replace(self._options, **changes)
        return AsyncClient(AsyncOverride(self._backend, changes), options)

    @property
    def server_info(self) -> ServerInfo:
        """See :attr:`Client.server_info`."""
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


class Connecting:
    """What :meth:`AsyncClient.connect` and :meth:`AsyncClient.start_sidecar` return.

    Await it for an :class:`AsyncClient`, or use it in ``async with`` to have the client
    closed when the block ends. Connect errors are raised at that point.
    """

    __slots__ = ("_client", "_pending")

    def __init__(self, pending: Awaitable[AsyncClient]) -> None:
        self._pending = pending
        self._client: AsyncClient | None = None

    def __await__(self) -> Generator[Any, None, AsyncClient]:
        return self._pending.__await__()

    async def __aenter__(self) -> AsyncClient:
        self._client = await self._pending
        return self._client

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._client is not None:
            await self._client.close()
