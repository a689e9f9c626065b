"""W15 listener variants, seen by a raw Python ``ssl`` client.

The discovery files must keep advertising the genuine identity; only the live
handshake shows the problem.
"""

from __future__ import annotations

import hashlib
import json
import socket
import ssl
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from worker_harness import FaultControl, Worker, private_dir


def handshake(worker, *, tls13_only: bool, verify_pem: bytes | None):
    """(tls version, DER chain) of one handshake, or raises ssl.SSLError."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3 if tls13_only else ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(["h2"])
    if verify_pem is None:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx.load_verify_locations(cadata=verify_pem.decode())
    host, port = worker.address
    with socket.create_connection((host, port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname=host) as tls:
        chain = [c.public_bytes(ssl._ssl.ENCODING_DER)  # type: ignore[attr-defined]
                 for c in tls._sslobj.get_unverified_chain()]
        return tls.version(), chain


@pytest.fixture(scope="module", params=["tls12", "foreign-leaf", "leaf-with-intermediate", "no-h2-alpn"])
def variant(request, short_tmp):
    name = request.param
    pub = private_dir(short_tmp / f"pub-{name}")
    sock = short_tmp / f"{name}.sock"
    worker = Worker.start(pub, "--fault-control-socket", str(sock), "--fault-listener", name)
    control = FaultControl(sock)
    control.begin(f"listener-{name}")
    try:
        yield name, worker, control
    finally:
        control.close()
        worker.terminate()


def test_discovery_files_stay_truthful(variant):
    _, worker, _ = variant
    desc = json.loads((worker.public_dir / "endpoint.json").read_text())
    der = x509.load_pem_x509_certificate(worker.certificate_pem).public_bytes(Encoding.DER)
    assert desc["certificate_sha256"] == hashlib.sha256(der).hexdigest()


def test_live_handshake_reveals_the_variant(variant):
    name, worker, control = variant
    pin = worker.certificate_sha256
    if name == "tls12":
        version, chain = handshake(worker, tls13_only=False, verify_pem=worker.certificate_pem)
        assert version == "TLSv1.2"
        assert hashlib.sha256(chain[0]).hexdigest() == pin
        with pytest.raises(ssl.SSLError):
            handshake(worker, tls13_only=True, verify_pem=worker.certificate_pem)
    elif name == "foreign-leaf":
        version, chain = handshake(worker, tls13_only=True, verify_pem=None)
        assert version == "TLSv1.3" and len(chain) == 1
        assert hashlib.sha256(chain[0]).hexdigest() != pin
        leaf = x509.load_der_x509_certificate(chain[0])
        assert leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
        with pytest.raises(ssl.SSLError):  # a pinned client refuses it
            handshake(worker, tls13_only=True, verify_pem=worker.certificate_pem)
    elif name == "no-h2-alpn":
        # The pinned leaf over TLS 1.3, but no protocol agreed through ALPN; the worker
        # keeps the connection (it serves HTTP/2 on it anyway) instead of closing it.
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.set_alpn_protocols(["h2"])
        ctx.load_verify_locations(cadata=worker.certificate_pem.decode())
        host, port = worker.address
        with socket.create_connection((host, port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname=host) as tls:
            assert tls.version() == "TLSv1.3"
            assert tls.selected_alpn_protocol() is None
            assert hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest() == pin
            # Not closed by the worker: it speaks HTTP/2 on the connection anyway, starting
            # with its SETTINGS frame (9-byte frame header, type 0x4).
            header = b""
            while len(header) < 9:
                chunk = tls.recv(9 - len(header))
                assert chunk, "the worker closed the connection"
                header += chunk
            assert header[3] == 0x4
    else:
        version, chain = handshake(worker, tls13_only=True, verify_pem=None)
        assert version == "TLSv1.3" and len(chain) == 2
        assert hashlib.sha256(chain[0]).hexdigest() == pin
        extra = x509.load_der_x509_certificate(chain[1])
        assert extra.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True

    # The server records a handshake when its own side finishes, which can be a
    # moment after the client's: poll briefly.
    want = 2 if name == "tls12" else 1
    deadline = time.monotonic() + 5
    while len(conns := control.observations()["connections"]) < want:
        assert time.monotonic() < deadline, conns
        time.sleep(0.02)
    if name == "tls12":
        ok = [c for c in conns if c["handshake_completed"]]
        failed = [c for c in conns if not c["handshake_completed"]]
        assert ok[0]["tls_version"] == "TLSv1.2"
        assert failed and failed[0]["tls_version"] is None
    else:
        assert conns[0]["tls_version"] == "TLSv1.3"


def test_observations_say_when_a_connection_closed(variant):
    """``closed`` (and the runner's ``open_connection_count``) follow each connection's end."""
    name, worker, control = variant
    if name != "no-h2-alpn":
        pytest.skip("one variant is enough")
    control.begin("closed-flag")
    host, port = worker.address
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.set_alpn_protocols(["h2"])
    ctx.load_verify_locations(cadata=worker.certificate_pem.decode())
    raw = socket.create_connection((host, port), timeout=10)
    tls = ctx.wrap_socket(raw, server_hostname=host)
    deadline = time.monotonic() + 5
    while not (conns := control.observations()["connections"]):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert conns[0]["closed"] is False
    tls.close()
    while not control.observations()["connections"][0]["closed"]:
        assert time.monotonic() < deadline + 5, control.observations()
        time.sleep(0.02)
