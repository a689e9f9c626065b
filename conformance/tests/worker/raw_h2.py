"""A bare HTTP/2 gRPC client for requests no well-behaved client library sends.

grpcio frames every message correctly and respects the server's stream limit;
the hostile-input tests need truncated frames, second messages, streams held
open without a body and more streams than the server allows. This client
speaks HTTP/2 through ``h2`` (already installed with grpclib) and leaves the
gRPC framing to the caller.
"""

from __future__ import annotations

import base64
import socket
import ssl
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.events
from google.rpc import error_details_pb2, status_pb2
from h2.settings import SettingCodes


def frame(message: bytes, *, compressed: bool = False, length: int | None = None) -> bytes:
    """One gRPC length-prefixed message (``length`` may lie about the size)."""
    return struct.pack(">?I", compressed, len(message) if length is None else length) + message


@dataclass
class Outcome:
    """What came back on one stream."""

    headers: dict[str, str] = field(default_factory=dict)
    data: bytes = b""
    ended: bool = False
    reset_code: int | None = None

    @property
    def done(self) -> bool:
        return self.ended or self.reset_code is not None

    @property
    def grpc_status(self) -> int | None:
        value = self.headers.get("grpc-status")
        return None if value is None else int(value)

    def error_info(self) -> tuple[str, dict[str, str]]:
        """The ErrorInfo reason and metadata of a failed call."""
        raw = self.headers["grpc-status-details-bin"]
        status = status_pb2.Status.FromString(base64.b64decode(raw + "=" * (-len(raw) % 4)))
        info = error_details_pb2.ErrorInfo()
        assert len(status.details) == 1 and status.details[0].Unpack(info)
        return info.reason, dict(info.metadata)


class RawClient:
    """One TLS + HTTP/2 connection to the worker."""

    def __init__(self, target: str, pem: bytes, bearer: str) -> None:
        host, port = target.rsplit(":", 1)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(cadata=pem.decode())
        ctx.set_alpn_protocols(["h2"])
        raw = socket.create_connection((host.strip("[]"), int(port)), timeout=30)
        self.sock = ctx.wrap_socket(raw, server_hostname=host.strip("[]"))
        self.authority = target
        self.bearer = bearer
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.outcomes: dict[int, Outcome] = {}
        self.goaway = False
        self.server_max_streams: int | None = None
        self._acked = False
        self._ping_acked: list[bool] = []
        self._flush()
        # Wait for the server's settings and its ack of ours, so limits are in force.
        self.pump(lambda: self.server_max_streams is not None and self._acked)

    def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def pump(self, until: Callable[[], bool], timeout: float = 30) -> None:
        """Read and handle frames until ``until()`` holds (or fail after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while not until():
            assert time.monotonic() < deadline, "no answer from the worker"
            self.sock.settimeout(max(0.05, deadline - time.monotonic()))
            chunk = self.sock.recv(65536)
            if not chunk:
                self.goaway = True
                return
            for event in self.conn.receive_data(chunk):
                self._handle(event)
            self._flush()

    def _handle(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RemoteSettingsChanged):
            changed = event.changed_settings.get(SettingCodes.MAX_CONCURRENT_STREAMS)
            if changed is not None:
                self.server_max_streams = changed.new_value
        elif isinstance(event, h2.events.SettingsAcknowledged):
            self._acked = True
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.goaway = True
        elif isinstance(event, h2.events.PingAckReceived):
            self._ping_acked.append(True)
        stream_id = getattr(event, "stream_id", None)
        if not stream_id or stream_id not in self.outcomes:
            return
        outcome = self.outcomes[stream_id]
        if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
            outcome.headers.update((str(k), str(v)) for k, v in event.headers)
        elif isinstance(event, h2.events.DataReceived):
            outcome.data += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            outcome.ended = True
        elif isinstance(event, h2.events.StreamReset):
            outcome.reset_code = int(event.error_code)

    def open(self, path: str, *, end: bool = False, bearer: str | None = None,
             ignore_limit: bool = False, extra: tuple[tuple[str, str], ...] = ()) -> int:
        """Send the request headers of a new stream (plus ``extra``); returns its ID."""
        if ignore_limit:  # pretend the server allows more, to test its refusal
            self.conn.remote_settings.update({SettingCodes.MAX_CONCURRENT_STREAMS: 1 << 20})
            self.conn.remote_settings.acknowledge()
        stream_id = self.conn.get_next_available_stream_id()
        self.outcomes[stream_id] = Outcome()
        self.conn.send_headers(stream_id, [
            (":method", "POST"), (":scheme", "https"), (":path", path),
            (":authority", self.authority), ("content-type", "application/grpc"), ("te", "trailers"),
            ("authorization", f"Bearer {bearer or self.bearer}"), *extra,
        ], end_stream=end)
        self._flush()
        return stream_id

    def send(self, stream_id: int, data: bytes, *, end: bool = True) -> None:
        """Send ``data`` on a stream, in as many DATA frames as flow control allows."""
        view = memoryview(data)
        while True:
            window = min(self.conn.local_flow_control_window(stream_id),
                         self.conn.max_outbound_frame_size)
            if window <= 0 and view:
                self.pump(lambda: self.conn.local_flow_control_window(stream_id) > 0)
                continue
            chunk, view = view[:window], view[window:]
            self.conn.send_data(stream_id, bytes(chunk), end_stream=end and not view)
            self._flush()
            if not view:
                return

    def round_trip(self) -> None:
        """A PING and its answer: the worker has read every frame sent before it."""
        acked: list[bool] = []
        self._ping_acked = acked
        self.conn.ping(b"roundtrp")
        self._flush()
        self.pump(lambda: bool(acked))

    def reset(self, stream_id: int) -> None:
        self.conn.reset_stream(stream_id)
        self._flush()

    def wait(self, stream_id: int, timeout: float = 30) -> Outcome:
        outcome = self.outcomes[stream_id]
        self.pump(lambda: outcome.done, timeout)
        return outcome

    def call(self, path: str, body: bytes, *, end: bool = True, timeout: float = 30,
             extra: tuple[tuple[str, str], ...] = ()) -> Outcome:
        """One request: headers, then ``body`` (already gRPC-framed), then the answer."""
        stream_id = self.open(path, end=not body and end, extra=extra)
        if body:
            self.send(stream_id, body, end=end)
        return self.wait(stream_id, timeout)

    def close(self) -> None:
        try:
            self.conn.close_connection()
            self._flush()
        except OSError:
            pass
        self.sock.close()
