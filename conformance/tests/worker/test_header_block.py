"""The 16 KiB header-block limit counts the whole block of every request (W11).

Every header counts, as HTTP/2 counts a header list (name, value and 32 bytes
per field): pseudo-headers, ``user-agent``, ``grpc-*`` headers and metadata
alike. A block of exactly the limit is served; one byte more is refused with
``RESOURCE_EXHAUSTED`` / ``REQUEST_TOO_LARGE`` and the connection carries on.
"""

from __future__ import annotations

import pytest
from raw_h2 import Outcome, RawClient, frame

SERVER_INFO = "/colossus.api.v1alpha1.SystemService/GetServerInfo"
LIMIT = 16 << 10


def _block(client: RawClient, padding_name: str, padding: int) -> list[tuple[str, str]]:
    headers = [
        (":method", "POST"), (":scheme", "https"), (":path", SERVER_INFO),
        (":authority", client.authority), ("content-type", "application/grpc"),
        ("te", "trailers"), ("authorization", f"Bearer {client.bearer}"),
    ]
    if padding_name == ":authority":  # grow the authority instead of adding a field
        headers[3] = (":authority", client.authority + "a" * padding)
    else:
        headers.append((padding_name, "y" * padding))
    return headers


def _size(headers: list[tuple[str, str]]) -> int:
    return sum(len(name) + len(value) + 32 for name, value in headers)


def _call(client: RawClient, headers: list[tuple[str, str]]) -> Outcome:
    stream_id = client.conn.get_next_available_stream_id()
    client.outcomes[stream_id] = Outcome()
    client.conn.send_headers(stream_id, headers)
    client.send(stream_id, frame(b""))
    return client.wait(stream_id)


def _padded_to(client: RawClient, name: str, total: int) -> list[tuple[str, str]]:
    base = _block(client, name, 0)
    return _block(client, name, total - _size(base))


@pytest.mark.parametrize("name", ["x-padding", "user-agent", "grpc-padding", ":authority"])
def test_every_header_counts_and_the_limit_is_exact(make_worker, name):
    worker = make_worker()
    client = RawClient(worker.target, worker.pem, worker.bearers["app1"])
    try:
        at_limit = _padded_to(client, name, LIMIT)
        assert _size(at_limit) == LIMIT
        assert _call(client, at_limit).grpc_status == 0
        over = _call(client, _padded_to(client, name, LIMIT + 1))
        assert over.grpc_status == 8
        assert over.error_info() == ("REQUEST_TOO_LARGE", {"limit": "max_header_bytes"})
        assert _call(client, _block(client, "x-small", 10)).grpc_status == 0
    finally:
        client.close()
