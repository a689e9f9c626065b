"""C1-C3: strict descriptor and certificate parsing, and the expected identity."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from colossus_agent_client import CertificateError, DescriptorError, PinMismatchError
from colossus_agent_client._transport._certificate import parse_leaf_certificate
from colossus_agent_client._transport._descriptor import discover, parse_descriptor
from fake_worker import make_leaf

PIN = "a" * 64
GOOD = {
    "endpoint": "https://127.0.0.1:4433",
    "instance_id": "inst_1",
    "pid": 42,
    "api_version": "v1alpha1",
    "certificate_sha256": PIN,
}


def _raw(**changes: object) -> bytes:
    data = dict(GOOD)
    for key, value in changes.items():
        if value is ...:
            del data[key]
        else:
            data[key] = value
    return json.dumps(data).encode()


def test_good_descriptor() -> None:
    d = parse_descriptor(_raw())
    assert (d.endpoint.host, d.endpoint.port, d.pid) == ("127.0.0.1", 4433, 42)
    assert parse_descriptor(_raw(endpoint="https://[::1]:1")).endpoint.grpc_target == "ipv6:[::1]:1"


@pytest.mark.parametrize(
    "raw",
    [
        _raw(extra=1),
        _raw(pid=...),
        _raw(pid="42"),
        _raw(pid=True),
        _raw(pid=0),
        _raw(instance_id=""),
        _raw(instance_id="a/b"),
        _raw(api_version="v1"),
        _raw(certificate_sha256="A" * 64),
        _raw(certificate_sha256="a" * 63),
        _raw(endpoint="http://127.0.0.1:4433"),
        _raw(endpoint="https://localhost:4433"),
        _raw(endpoint="https://10.0.0.1:4433"),
        _raw(endpoint="https://192.168.1.1:4433"),
        _raw(endpoint="https://8.8.8.8:4433"),
        _raw(endpoint="https://127.0.0.2:4433"),
        _raw(endpoint="https://user@127.0.0.1:4433"),
        _raw(endpoint="https://127.0.0.1:4433/path"),
        _raw(endpoint="https://127.0.0.1:4433?q=1"),
        _raw(endpoint="https://127.0.0.1:4433#f"),
        _raw(endpoint="https://127.0.0.1:0"),
        _raw(endpoint="https://127.0.0.1:65536"),
        _raw(endpoint="https://127.0.0.1:04433"),
        _raw(endpoint="https://127.0.0.1"),
        _raw(endpoint="https://[0:0:0:0:0:0:0:1]:4433"),
        _raw(endpoint=["https://127.0.0.1:4433"]),
        b"[]",
        b"{",
        b'{"endpoint": "https://127.0.0.1:1", "endpoint": "https://127.0.0.1:2"}',
        _raw()[:-1] + b', "pid2": NaN}',
        b"\xff\xfe",
        _raw(instance_id="x" * 4000),
    ],
)
def test_bad_descriptors(raw: bytes) -> None:
    with pytest.raises(DescriptorError):
        parse_descriptor(raw)


def test_certificate_rules() -> None:
    leaf = make_leaf()
    assert parse_leaf_certificate(leaf.cert_pem, endpoint_host="127.0.0.1").sha256 == leaf.sha256
    with pytest.raises(CertificateError):
        parse_leaf_certificate(leaf.cert_pem + leaf.cert_pem)  # bundle
    with pytest.raises(CertificateError):
        parse_leaf_certificate(leaf.cert_pem + leaf.key_pem)  # private key
    with pytest.raises(CertificateError):
        parse_leaf_certificate(leaf.cert_pem + b"trailing")
    with pytest.raises(CertificateError):
        parse_leaf_certificate(b"junk\n" + leaf.cert_pem)
    with pytest.raises(CertificateError):
        parse_leaf_certificate(make_leaf(ca=True).cert_pem)
    with pytest.raises(CertificateError):
        parse_leaf_certificate(make_leaf(curve=ec.SECP384R1()).cert_pem)
    with pytest.raises(CertificateError):
        parse_leaf_certificate(make_leaf(ip="::1").cert_pem, endpoint_host="127.0.0.1")
    body = leaf.cert_pem.replace(b"A", b"!", 1)
    with pytest.raises(CertificateError):
        parse_leaf_certificate(body)


def _folder(tmp_path: Path, descriptor: bytes, pem: bytes, mode: int = 0o600) -> Path:
    d = tmp_path / "api"
    d.mkdir(mode=0o700)
    for name, data in (("endpoint.json", descriptor), ("certificate.pem", pem)):
        (d / name).write_bytes(data)
        os.chmod(d / name, mode)
    return d


def test_discover_checks_everything_against_the_expectation(tmp_path: Path) -> None:
    leaf = make_leaf()
    d = _folder(tmp_path, _raw(certificate_sha256=leaf.sha256), leaf.cert_pem)
    found = discover(d, expected_instance_id="inst_1", expected_certificate_sha256=leaf.sha256)
    assert found.certificate.sha256 == leaf.sha256
    with pytest.raises(PinMismatchError):
        discover(d, expected_instance_id="inst_2", expected_certificate_sha256=leaf.sha256)
    with pytest.raises(PinMismatchError):
        discover(d, expected_instance_id="inst_1", expected_certificate_sha256="b" * 64)


def test_discover_refuses_a_certificate_that_disagrees_with_the_pin(tmp_path: Path) -> None:
    leaf, other = make_leaf(), make_leaf()
    d = _folder(tmp_path, _raw(certificate_sha256=leaf.sha256), other.cert_pem)
    with pytest.raises(PinMismatchError):
        discover(d, expected_instance_id="inst_1", expected_certificate_sha256=leaf.sha256)


def test_discover_refuses_open_modes_links_and_big_files(tmp_path: Path) -> None:
    leaf = make_leaf()
    d = _folder(tmp_path, _raw(certificate_sha256=leaf.sha256), leaf.cert_pem, mode=0o644)
    with pytest.raises(DescriptorError):
        discover(d, expected_instance_id="inst_1", expected_certificate_sha256=leaf.sha256)
    os.chmod(d / "endpoint.json", 0o600)
    with pytest.raises(CertificateError):
        discover(d, expected_instance_id="inst_1", expected_certificate_sha256=leaf.sha256)
    os.chmod(d / "certificate.pem", 0o600)
    os.chmod(d, 0o755)
    with pytest.raises(DescriptorError):
        discover(d, expected_instance_id="inst_1", expected_certificate_sha256=leaf.sha256)
    os.chmod(d, 0o700)
    (d / "endpoint.json").rename(d / "real.json")
    (d / "endpoint.json").symlink_to(d / "real.json")
    with pytest.raises(DescriptorError):
        discover(d, expected_instance_id="inst_1", expected_certificate_sha256=leaf.sha256)
    (d / "endpoint.json").unlink()
    (d / "endpoint.json").write_bytes(b" " * 5000)
    os.chmod(d / "endpoint.json", 0o600)
    with pytest.raises(DescriptorError):
        discover(d, expected_instance_id="inst_1", expected_certificate_sha256=leaf.sha256)
