"""W15: the fault channel cannot be reached through the public API, bearer or not.

The worker runs with fault injection on. A client holding a valid bearer tries
every public door it could think of: gRPC paths that look like a control or
reflection service carrying a control request, and the control protocol's JSON
lines sent straight down the TLS port. Each is refused, and the control
channel's state is exactly what it was.
"""

from __future__ import annotations

import json
import socket
import ssl

import grpc
import pytest

BEGIN = json.dumps({"op": "begin_case", "case": "from-public-api",
                    "faults": [{"kind": "rpc_fail", "method": "SystemService/GetServerInfo",
                                "code": "UNAVAILABLE"}]}).encode() + b"\n"
PATHS = [
    "/colossus.conformance.v1.FaultControl/BeginCase",
    "/colossus.api.v1alpha1.FaultService/BeginCase",
    "/colossus.api.v1alpha1.SystemService/BeginCase",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
    "/grpc.health.v1.Health/Check",
    "/faults",
]


def _state(faulty) -> dict[str, object]:
    reply = faulty.control.send({"op": "ping"})
    assert reply["ok"]
    return reply


@pytest.mark.parametrize("path", PATHS)
def test_control_lookalike_paths_are_unimplemented(faulty, path):
    before = _state(faulty)
    with faulty.worker.client(faulty.bearer) as c:
        call = c.channel.unary_unary(path, request_serializer=None,
                                     response_deserializer=None)
        with pytest.raises(grpc.RpcError) as caught:
            call(BEGIN, metadata=c.metadata, timeout=10)
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert c.server_info().api_package == "colossus.api.v1alpha1"
    assert _state(faulty) == before


def test_control_lines_down_the_tls_port_go_nowhere(faulty):
    before = _state(faulty)
    host, port = faulty.worker.endpoint.removeprefix("https://").rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cadata=faulty.worker.certificate_pem.decode())
    with socket.create_connection((host.strip("[]"), int(port)), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname=host.strip("[]")) as tls:
        tls.sendall(BEGIN)
        received = b""
        try:
            while chunk := tls.recv(4096):
                received += chunk
        except (ssl.SSLError, ConnectionError):
            pass
    assert b'"ok"' not in received  # no control reply: an HTTP/2 GOAWAY at most
    assert _state(faulty) == before
    with faulty.worker.client(faulty.bearer) as c:
        assert c.server_info().api_package == "colossus.api.v1alpha1"
