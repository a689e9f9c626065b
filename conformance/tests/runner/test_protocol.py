"""The protocol codec: framing, schema checks and bearer frames."""

import io

import pytest

from colossus_conformance import protocol


def test_round_trip_of_a_result():
    message = {
        "type": "result",
        "case": "a.b",
        "steps": [
            {
                "id": "s",
                "op": "watch",
                "value": {"events": []},
                "error": {"kind": "watch_gap", "grpc_code": None},
            }
        ],
    }
    assert protocol.decode_line(protocol.encode_line(message)) == message


@pytest.mark.parametrize(
    "line",
    [
        b"not json\n",
        b"[1, 2]\n",
        b"\n",
        b'{"type": "result", "case": "x"}\n',
        b'{"type": "result", "case": "x", "steps": '
        b'[{"id": "s", "op": "w", "error": {"kind": "nonsense"}}]}\n',
        b'{"type": "client_hello", "protocol_version": 1, "sdk": "Py", "sdk_version": "1", "features": []}\n',
        b'{"type": "mystery"}\n',
    ],
)
def test_bad_lines_are_refused(line):
    with pytest.raises(protocol.ProtocolError):
        protocol.decode_line(line)


def test_bearer_frames():
    data = protocol.encode_bearer_frame("cb1_abc") + protocol.encode_bearer_frame(b"")
    stream = io.BytesIO(data)
    assert protocol.read_bearer_frame(stream) == b"cb1_abc"
    assert protocol.read_bearer_frame(stream) == b""
    with pytest.raises(protocol.ProtocolError):
        protocol.read_bearer_frame(stream)


def test_oversized_bearer_frame_is_refused():
    with pytest.raises(protocol.ProtocolError):
        protocol.encode_bearer_frame("x" * 5000)
    with pytest.raises(protocol.ProtocolError):
        protocol.read_bearer_frame(io.BytesIO(b"\x00\x01\x00\x00"))
