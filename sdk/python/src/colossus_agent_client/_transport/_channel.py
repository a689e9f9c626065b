"""gRPC channels to the trust relay's private socket, plus per-call metadata.

grpcio never sees the worker's TLS: the channel speaks plaintext HTTP/2 to the relay
(``_relay.py``), which checks each connection to the worker before copying any byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import grpc
import grpc.aio
import grpc.experimental

from ._descriptor import Endpoint

USER_AGENT: Final = "colossus-agent-client-python/0.1.0a1"
# Bounds the request headers' size; far above what the SDK sends.
_MAX_METADATA_BYTES: Final = 16 * 1024
# Each stream's HTTP/2 receive window (see channel_options).
_RECEIVE_WINDOW_BYTES: Final = 256 * 1024

Metadata = tuple[tuple[str, str], ...]


def authority(endpoint: Endpoint) -> str:
    """The ``:authority`` the worker expects: its own address, as if dialled directly."""
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    return f"{host}:{endpoint.port}"


def channel_options(max_receive: int, max_send: int) -> Sequence[tuple[str, object]]:
    """Options shared by the sync and async channels."""
    return (
        ("grpc.max_receive_message_length", max_receive),
        ("grpc.max_send_message_length", max_send),
        ("grpc.max_metadata_size", _MAX_METADATA_BYTES),
        ("grpc.primary_user_agent", USER_AGENT),
        # The SDK decides what may be retried; grpcio's transparent retries stay off.
        ("grpc.enable_retries", 0),
        # A channel never shares a connection with another channel of the process, so the
        # connection this client uses is one it opened itself.
        ("grpc.use_local_subchannel_pool", 1),
        # After the worker went away (a restart), look for it again at least every 2 s
        # rather than grpcio's default of up to 120 s, so a waiting retry resumes promptly.
        ("grpc.initial_reconnect_backoff_ms", 250),
        ("grpc.min_reconnect_backoff_ms", 250),
        ("grpc.max_reconnect_backoff_ms", 2000),
        # A fixed receive window instead of grpcio's bandwidth probe. The probe grows the
        # window after a few bursts until a whole replayed run fits, and then the worker
        # sends it in one write: the first event arrives only once every event was
        # encoded, and the two sides take turns. With a fixed window the worker produces
        # the next part while this side reads the last one (a watch took ~30% less wall
        # time).
        ("grpc.http2.bdp_probe", 0),
        # 256 KiB rather than HTTP/2's 64 KiB: four of the worker's 64 KiB writes in
        # flight. With 64 KiB the worker waited for a window update after each write, and
        # every update makes a round trip through the trust relay's thread (which needs
        # the GIL the reading thread holds): the relay alone cost ~10% of a replay's
        # wall time, ~4% with this window.
        ("grpc.http2.lookahead_bytes", _RECEIVE_WINDOW_BYTES),
    )


def sync_channel_options(max_receive: int, max_send: int) -> Sequence[tuple[str, object]]:
    """The sync channel's options: the shared ones, and server streams read in place.

    By default grpcio hands every streamed message from its polling thread to the reading
    thread, a wake-up and a GIL hand-off per message that cost more than converting the
    event. With this option the thread iterating a server stream (WatchRun,
    DownloadArtifact) polls the call itself. ``cancel()`` from another thread (``close()``,
    the idle watchdog) still ends the read. The asyncio channel has no such thread.
    """
    return (
        *channel_options(max_receive, max_send),
        # grpcio matches this key exactly ("SingleThreadedUnaryStream"); a look-alike such
        # as "grpc.experimental.single_threaded_unary_stream" is silently ignored.
        (grpc.experimental.ChannelOptions.SingleThreadedUnaryStream, 1),
    )


def start_connecting_sync(channel: grpc.Channel) -> None:
    """Asks grpcio to open the channel's connection now rather than at its first call.

    Best effort: grpcio keeps its core channel as ``_channel``; without it the connection
    simply opens at the first call, as it would anyway.
    """
    core = getattr(channel, "_channel", None)
    check = getattr(core, "check_connectivity_state", None)
    if check is not None:
        check(True)


def sync_channel(
    relay_target: str, endpoint: Endpoint, *, max_receive: int, max_send: int
) -> grpc.Channel:
    """A channel to the relay at ``relay_target`` that names ``endpoint`` as its authority."""
    return grpc.insecure_channel(
        relay_target,
        options=(
            *sync_channel_options(max_receive, max_send),
            ("grpc.default_authority", authority(endpoint)),
        ),
    )


def async_channel(
    relay_target: str, endpoint: Endpoint, *, max_receive: int, max_send: int
) -> grpc.aio.Channel:
    """The asyncio twin of :func:`sync_channel`."""
    return grpc.aio.insecure_channel(
        relay_target,
        options=(
            *channel_options(max_receive, max_send),
            ("grpc.default_authority", authority(endpoint)),
        ),
    )
