"""The connect sequence (C1-C7) and the call helpers shared by every resource.

Order matters and is the same for both placements and both clients:

1. the target is known (daemon: discovery files checked against the expected identity;
   sidecar: bootstrap reply validated);
2. the trust relay starts, and while grpcio sets up its channel to it, the relay's first
   TLS 1.3 connection to the worker is checked on the calling thread (version, chain
   length, pin: C4); that connection then carries grpcio's first one, and every later
   one grpcio opens is checked the same way before any byte of it is forwarded (see
   ``_transport/_relay.py``);
3. only once that check passed is the bearer loaded from its provider (C5), so a refused
   worker never receives a byte of HTTP/2;
4. ``GetServerInfo`` is the first call, and the first to carry the bearer; its answer is
   verified before anything else may run (C6);
5. the inbound cap is lowered to the advertised response cap when that is smaller (C7).

A call that fails because the relay refused a later connection raises that refusal
(``TlsPolicyError`` / ``PinMismatchError``, never retried) instead of ``UNAVAILABLE``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import grpc
import grpc.aio
from google.protobuf.message import Message

from . import _convert
from ._credentials import CredentialProvider, load_bearer
from ._errors import ColossusError, IncompatibleServerError, TransportError, TrustError
from ._models import DeploymentMode, ServerInfo
from ._options import ClientOptions, RetryPolicy
from ._reasons import LocalReason
from ._request_cap import RequestCap, capped, capped_async
from ._retry import refusal_or, retry_async, retry_sync
from ._status import from_rpc_error
from ._transport import _channel
from ._transport._bearer import Bearer, CallMetadata
from ._transport._certificate import LeafCertificate
from ._transport._descriptor import Endpoint
from ._transport._relay import TrustRelay
from .api.v1alpha1 import (
    artifacts_pb2_grpc,
    run_service_pb2,
    run_service_pb2_grpc,
    system_pb2,
    system_pb2_grpc,
)

log = logging.getLogger("colossus_agent_client")

API_PACKAGE: Final = "colossus.api.v1alpha1"
API_MAJOR: Final = 1
# grpc_connectivity_state READY in grpcio's core (stable since the C core's first release).
_READY: Final = 2
_POLL_SECONDS: Final = 0.25
# How often a connect's GetServerInfo, waiting for a ready channel, looks whether nothing
# listens any more (see connect_ended).
_CONNECT_WATCH_SECONDS: Final = 0.05

T = TypeVar("T")

WATCH_RUN_METHOD: Final = (
    f"/{run_service_pb2.DESCRIPTOR.services_by_name['RunService'].full_name}/WatchRun"
)
"""``RunService.WatchRun``, which the watch calls with its own (encoded) response type."""
GET_RUN_METHOD: Final = (
    f"/{run_service_pb2.DESCRIPTOR.services_by_name['RunService'].full_name}/GetRun"
)
"""``RunService.GetRun``, which the sync watch also sends as a one-answer stream."""


@dataclass(frozen=True, slots=True)
class Target:
    """A worker the caller has decided to trust: where it is and what it must prove."""

    endpoint: Endpoint
    certificate: LeafCertificate
    expected_instance_id: str
    expected_pin: str
    expected_mode: DeploymentMode


def verify_server_info(info: ServerInfo, target: Target) -> None:
    """C6: the first answer must name the provisioned instance, contract and placement."""
    checks = (
        ("instance_id", target.expected_instance_id, info.instance_id),
        ("api_package", API_PACKAGE, info.api_package),
        ("api_major", API_MAJOR, info.api_major),
        ("deployment_mode", target.expected_mode, info.deployment_mode),
    )
    # None of these is secret, so each mismatch shows what was expected and what came.
    problems = [
        (name, getattr(want, "name", want), getattr(got, "name", got))
        for name, want, got in checks
        if got != want
    ]
    if problems:
        raise IncompatibleServerError(
            "GetServerInfo disagrees with the expected worker: "
            + ", ".join(f"{name} (expected {want!r}, got {got!r})" for name, want, got in problems),
            reason="SERVER_INFO_MISMATCH",
            metadata={"fields": ",".join(name for name, _, _ in problems)},
        )


class Session:
    """What both connection kinds share: the verified identity, bearer and options."""

    def __init__(
        self,
        target: Target,
        bearer: Bearer,
        options: ClientOptions,
        info: ServerInfo,
        relay: TrustRelay | None = None,
    ) -> None:
        self.target = target
        self.options = options
        # C7: every stub of the connection is made over CappedChannel(channel, request_cap),
        # which reads the cap from here, so it follows the current ServerInfo.
        self.request_cap = RequestCap(info)
        self._server_info = info
        self.relay = relay
        if relay is not None:
            # A client dropped without close() still stops its relay thread and removes
            # the socket folder once collected.
            weakref.finalize(self, relay.close)
        # Only the redacting Bearer is kept; the header pair is built per call (see
        # CallMetadata), so no attribute or local of the SDK holds the raw header.
        self._bearer = bearer

    @property
    def server_info(self) -> ServerInfo:
        return self._server_info

    @server_info.setter
    def server_info(self, info: ServerInfo) -> None:
        self._server_info = info
        self.request_cap.info = info

    def metadata(self) -> _channel.Metadata:
        return call_metadata(self._bearer, self.options.trace_context)

    def trust_refusal(self) -> TrustError | None:
        """Why the relay refused the worker's latest connection; None while it passes."""
        return self.relay.refusal() if self.relay is not None else None

    def trace(self) -> tuple[str, str | None] | None:
        provider = self.options.trace_context
        return provider() if provider is not None else None

    def timeout(self, timeout: float | object | None) -> float | None:
        if timeout is DEFAULT:
            return self.options.timeout
        return timeout  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"Session(endpoint={self.target.endpoint}, instance={self.server_info.instance_id})"


def call_metadata(bearer: Bearer, trace_context: object = None) -> _channel.Metadata:
    """The metadata of one call: authorization, then W3C trace context when configured."""
    auth = bearer.authorization_metadata()
    trace = trace_context() if callable(trace_context) else None
    if trace is None:
        return CallMetadata((auth,))
    traceparent, tracestate = trace
    if tracestate:
        return CallMetadata((auth, ("traceparent", traceparent), ("tracestate", tracestate)))
    return CallMetadata((auth, ("traceparent", traceparent)))


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()
"""Sentinel for "use the client's default timeout"."""


def _caps(options: ClientOptions, info: ServerInfo | None) -> tuple[int, int]:
    """The channel's (receive, send) caps in bytes.

    Before ``GetServerInfo`` both are the client's own response cap. Afterwards only a
    narrower advertised response cap changes them (and so needs a new channel): the
    worker's request cap is enforced before sending by ``CappedChannel`` and the upload
    chunking, so the channel's send cap is just a backstop and a different advertised
    request cap is no reason to build a second channel.
    """
    receive = options.max_response_bytes
    if info is not None and info.limits.max_response_bytes:
        receive = min(receive, info.limits.max_response_bytes)
    return receive, max(receive, options.max_response_bytes)


# --- sync -------------------------------------------------------------------------------


class SyncConnection(Session):
    """A verified sync channel with its stubs."""

    def __init__(
        self,
        target: Target,
        bearer: Bearer,
        options: ClientOptions,
        info: ServerInfo,
        channel: grpc.Channel,
        relay: TrustRelay | None = None,
    ) -> None:
        super().__init__(target, bearer, options, info, relay)
        self.channel = channel
        # Every request of this connection goes out through `checked` (C7, _request_cap.py).
        checked = capped(channel, self.request_cap)
        self.system = system_pb2_grpc.SystemServiceStub(checked)
        self.runs = run_service_pb2_grpc.RunServiceStub(checked)
        self.artifacts = artifacts_pb2_grpc.ArtifactServiceStub(checked)
        # The watch reads each event as it came off the wire (no response deserializer):
        # it keeps those bytes for replay comparison, sizes its window by them, and
        # decodes each message itself.
        self.watch_run_encoded = checked.unary_stream(
            WATCH_RUN_METHOD,
            request_serializer=run_service_pb2.WatchRunRequest.SerializeToString,
            response_deserializer=None,
        )
        # The watch's closing GetRun, called like a server stream: on the wire it is the
        # same unary call (one request, one answer, then the status), but grpcio sends it
        # at once and the watch reads the answer on its own thread. A unary ``future()``
        # would start a grpcio polling thread for the call, which under load delayed the
        # request by several milliseconds after the terminal event.
        self.get_run_in_place = checked.unary_stream(
            GET_RUN_METHOD,
            request_serializer=run_service_pb2.GetRunRequest.SerializeToString,
            response_deserializer=run_service_pb2.GetRunResponse.FromString,
        )

    def close(self) -> None:
        self.channel.close()
        if self.relay is not None:
            self.relay.close()

    def wait_ready(self, timeout: float | None) -> bool:
        """Waits until the channel can carry a call (e.g. the worker is back).

        Raises the relay's refusal as soon as one is recorded: waiting longer would only
        meet the same wrong listener again.
        """
        return wait_ready_sync(self.channel, timeout, self.trust_refusal)


def wait_ready_sync(
    channel: grpc.Channel,
    timeout: float | None,
    refusal: Callable[[], TrustError | None] = lambda: None,
) -> bool:
    """True once ``channel`` is connected; False when ``timeout`` passed or it closed.

    ``grpc.channel_ready_future`` would do this, but its polling thread can outlive the
    future and then fail noisily if the channel closes in the next moment. This polls the
    channel's connectivity on the calling thread instead, through the core channel object
    grpcio keeps as ``_channel``; if a grpcio lacks it, the wait is skipped (the next
    attempt then simply runs, as it did before this wait existed).
    """
    core: Any = getattr(channel, "_channel", None)
    check = getattr(core, "check_connectivity_state", None)
    watch = getattr(core, "watch_connectivity_state", None)
    if check is None or watch is None:
        return True
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        state = check(True)
        while state != _READY:
            refused = refusal()
            if refused is not None:
                raise refused
            left = _POLL_SECONDS if deadline is None else deadline - time.monotonic()
            if left <= 0:
                return False
            watch(state, time.time() + min(left, _POLL_SECONDS))
            state = check(True)
    except ValueError:  # the channel was closed meanwhile
        return False
    return True


def connect_ended(relay: TrustRelay, gone: Callable[[], bool] | None) -> TransportError | None:
    """Why a connect's ``GetServerInfo`` stops waiting now, or None (S1).

    The call waits for a ready channel (``wait_for_ready``), so a refused reconnect would
    hold it until its deadline: it ends instead once the relay's latest connection to the
    worker was refused (nothing listens), or once ``gone()`` says the worker exited (a
    sidecar), both as ``UNREACHABLE``, what a refused first connection says.
    """
    if gone is not None and gone():
        return TransportError(
            "the sidecar worker exited while the client was connecting to it",
            code=grpc.StatusCode.UNAVAILABLE,
            reason=LocalReason.UNREACHABLE,
        )
    refused = relay.unreachable()
    if refused is None:
        return None
    return TransportError(refused.message, code=refused.code, reason=refused.reason)


def answer_unless_ended(call: Any, ended: Callable[[], ColossusError | None]) -> Any:
    """The answer of a sync call future; cancelled as soon as ``ended()`` names a reason."""
    while True:
        try:
            return call.result(timeout=_CONNECT_WATCH_SECONDS)
        except grpc.FutureTimeoutError:
            stop = ended()
            if stop is not None:
                call.cancel()
                raise stop from None


def _get_server_info_sync(
    channel: grpc.Channel,
    bearer: Bearer,
    timeout: float,
    policy: RetryPolicy,
    refusal: Callable[[], TrustError | None],
    ended: Callable[[], ColossusError | None],
) -> ServerInfo:
    # Through the choke point too, with no cap: none is advertised before this answer.
    stub = system_pb2_grpc.SystemServiceStub(capped(channel, RequestCap()))

    def attempt() -> ServerInfo:
        call = stub.GetServerInfo.future(
            system_pb2.GetServerInfoRequest(),
            timeout=timeout,
            metadata=call_metadata(bearer),
            wait_for_ready=True,
        )
        response = answer_unless_ended(call, ended)
        return _convert.server_info(response.server_info)

    return retry_sync(attempt, policy, what="GetServerInfo", refusal=refusal)


def connect_sync(
    target: Target,
    credentials: CredentialProvider | Bearer,
    options: ClientOptions,
    *,
    gone: Callable[[], bool] | None = None,
) -> SyncConnection:
    """Connects and proves the worker (C1-C7); ``gone()`` (a sidecar's) says it exited."""
    started = time.monotonic()
    receive, send = _caps(options, None)
    relay = TrustRelay(
        target.endpoint,
        target.expected_pin,
        target.certificate,
        options.connect_timeout,
        preflight_first=True,
    )
    relay.gone = gone
    channel: grpc.Channel | None = None
    try:
        channel = _channel.sync_channel(
            relay.target, target.endpoint, max_receive=receive, max_send=send
        )
        # grpcio sets up its connection to the relay while this thread runs the pre-flight;
        # that connection then takes over the pre-flight's verified one, unread until then.
        _channel.start_connecting_sync(channel)
        relay.preflight()
        bearer = credentials if isinstance(credentials, Bearer) else load_bearer(credentials)
        info = _get_server_info_sync(
            channel,
            bearer,
            options.connect_timeout,
            options.retry,
            relay.refusal,
            lambda: connect_ended(relay, gone),
        )
        verify_server_info(info, target)
        new_receive, new_send = _caps(options, info)
        if (new_receive, new_send) != (receive, send):
            channel.close()
            channel = _channel.sync_channel(
                relay.target, target.endpoint, max_receive=new_receive, max_send=new_send
            )
    except BaseException:
        if channel is not None:
            channel.close()
        relay.close()
        raise
    log.info(
        "connected to %s instance=%s mode=%s in %.1f ms",
        target.endpoint,
        info.instance_id,
        info.deployment_mode.name,
        (time.monotonic() - started) * 1000,
    )
    return SyncConnection(target, bearer, options, info, channel, relay)


def call_mutation_sync(
    method: Callable[..., T],
    request: Message,
    session: Session,
    timeout: float | None,
    *,
    idempotency_key: str | None = None,
) -> T:
    """Runs a mutation exactly once; an ambiguous failure becomes OutcomeUnknownError."""
    refused_before = session.trust_refusal()
    try:
        return method(request, timeout=timeout, metadata=session.metadata())
    except grpc.RpcError as exc:
        raise mutation_error(exc, session, refused_before, idempotency_key) from None
    except ColossusError as exc:  # refused before sending (C7): nothing happened
        raise keyed(exc, idempotency_key) from None


# --- async ------------------------------------------------------------------------------


class AsyncConnection(Session):
    """A verified ``grpc.aio`` channel with its stubs."""

    def __init__(
        self,
        target: Target,
        bearer: Bearer,
        options: ClientOptions,
        info: ServerInfo,
        channel: grpc.aio.Channel,
        relay: TrustRelay | None = None,
    ) -> None:
        super().__init__(target, bearer, options, info, relay)
        self.channel = channel
        checked = capped_async(channel, self.request_cap)
        self.system = system_pb2_grpc.SystemServiceStub(checked)
        self.runs = run_service_pb2_grpc.RunServiceStub(checked)
        self.artifacts = artifacts_pb2_grpc.ArtifactServiceStub(checked)
        # As in SyncConnection: WatchRun's responses stay encoded until the watch decodes them.
        self.watch_run_encoded = checked.unary_stream(
            WATCH_RUN_METHOD,
            request_serializer=run_service_pb2.WatchRunRequest.SerializeToString,
            response_deserializer=None,
        )

    async def close(self) -> None:
        await self.channel.close(None)
        if self.relay is not None:
            await asyncio.to_thread(self.relay.close)

    async def wait_ready(self, timeout: float | None) -> bool:
        """Waits until the channel can carry a call; raises a relay refusal at once."""
        return await wait_ready_async(self.channel, timeout, self.trust_refusal)


async def wait_ready_async(
    channel: grpc.aio.Channel,
    timeout: float | None,
    refusal: Callable[[], TrustError | None] = lambda: None,
) -> bool:
    """The asyncio twin of :func:`wait_ready_sync`, polling the refusal between waits."""
    deadline = None if timeout is None else time.monotonic() + timeout
    state = channel.get_state(try_to_connect=True)
    while state is not grpc.ChannelConnectivity.READY:
        refused = refusal()
        if refused is not None:
            raise refused
        if state is grpc.ChannelConnectivity.SHUTDOWN:
            return False
        left = _POLL_SECONDS if deadline is None else deadline - time.monotonic()
        if left <= 0:
            return False
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(channel.wait_for_state_change(state), min(left, _POLL_SECONDS))
        state = channel.get_state(try_to_connect=True)
    return True


async def answer_unless_ended_async(call: Any, ended: Callable[[], ColossusError | None]) -> Any:
    """The asyncio twin of :func:`answer_unless_ended`, for a ``grpc.aio`` call."""
    answer = asyncio.ensure_future(call)
    try:
        while True:
            done, _ = await asyncio.wait((answer,), timeout=_CONNECT_WATCH_SECONDS)
            if done:
                return answer.result()
            stop = ended()
            if stop is not None:
                call.cancel()
                raise stop
    finally:
        if not answer.done():
            answer.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.RpcError):
                await answer


async def connect_async(
    target: Target,
    credentials: CredentialProvider | Bearer,
    options: ClientOptions,
    *,
    gone: Callable[[], bool] | None = None,
) -> AsyncConnection:
    """The asyncio twin of :func:`connect_sync`."""
    started = time.monotonic()
    receive, send = _caps(options, None)
    relay = TrustRelay(
        target.endpoint,
        target.expected_pin,
        target.certificate,
        options.connect_timeout,
        preflight_first=True,
    )
    relay.gone = gone
    channel: grpc.aio.Channel | None = None
    try:
        channel = _channel.async_channel(
            relay.target, target.endpoint, max_receive=receive, max_send=send
        )
        channel.get_state(try_to_connect=True)
        # As in connect_sync, on a thread: asyncio's own TLS would see a TLS 1.2 server's
        # refusal as a reset, so the very same blocking check keeps one verdict per server.
        await asyncio.to_thread(relay.preflight)
        bearer = credentials if isinstance(credentials, Bearer) else load_bearer(credentials)
        # Through the choke point too, with no cap (see _get_server_info_sync).
        stub = system_pb2_grpc.SystemServiceStub(capped_async(channel, RequestCap()))

        async def attempt() -> ServerInfo:
            call = stub.GetServerInfo(
                system_pb2.GetServerInfoRequest(),
                timeout=options.connect_timeout,
                metadata=call_metadata(bearer),
                wait_for_ready=True,
            )
            response = await answer_unless_ended_async(call, lambda: connect_ended(relay, gone))
            return _convert.server_info(response.server_info)

        async def refused() -> TrustError | None:
            return relay.refusal()

        info = await retry_async(attempt, options.retry, what="GetServerInfo", refusal=refused)
        verify_server_info(info, target)
        new_receive, new_send = _caps(options, info)
        if (new_receive, new_send) != (receive, send):
            await channel.close(None)
            channel = _channel.async_channel(
                relay.target, target.endpoint, max_receive=new_receive, max_send=new_send
            )
    except BaseException:
        if channel is not None:
            await channel.close(None)
        await asyncio.to_thread(relay.close)
        raise
    log.info(
        "connected to %s instance=%s mode=%s in %.1f ms",
        target.endpoint,
        info.instance_id,
        info.deployment_mode.name,
        (time.monotonic() - started) * 1000,
    )
    return AsyncConnection(target, bearer, options, info, channel, relay)


async def call_mutation_async(
    method: Callable[..., Awaitable[T]],
    request: Message,
    session: Session,
    timeout: float | None,
    *,
    idempotency_key: str | None = None,
) -> T:
    """The async twin of :func:`call_mutation_sync`."""
    refused_before = session.trust_refusal()
    try:
        return await method(request, timeout=timeout, metadata=session.metadata())
    except grpc.RpcError as exc:
        raise mutation_error(exc, session, refused_before, idempotency_key) from None
    except ColossusError as exc:  # refused before sending (C7): nothing happened
        raise keyed(exc, idempotency_key) from None


def keyed(error: ColossusError, idempotency_key: str | None) -> ColossusError:
    """``error`` carrying the create's key, as every error of a create does."""
    if idempotency_key is not None:
        error.idempotency_key = idempotency_key
    return error


def mutation_error(
    exc: grpc.RpcError,
    session: Session,
    refused_before: TrustError | None,
    idempotency_key: str | None,
) -> ColossusError:
    """A mutation's error; the relay's refusal only when it already stood at the start.

    A refusal recorded during the call may follow a verified connection that carried the
    request before it broke, so then the outcome stays unknown.
    """
    error = from_rpc_error(exc, mutation=True, idempotency_key=idempotency_key)
    if refused_before is not None and session.trust_refusal() is refused_before:
        return refusal_or(from_rpc_error(exc), refused_before)
    return error


def wrap_unexpected(exc: BaseException) -> ColossusError:
    """Turns an unexpected transport exception into a TransportError without details."""
    return TransportError(f"transport failure: {type(exc).__name__}")
