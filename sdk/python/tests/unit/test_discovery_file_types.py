"""C1/C2: only a regular file is read, whatever else is put in a discovery file's place.

A FIFO fed the genuine bytes by a writer must still be refused: without the regular-file
rule the reader would take its content. A directory must give a typed error, not an
``OSError`` from reading it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from colossus_agent_client import CertificateError, DescriptorError
from colossus_agent_client._transport._descriptor import discover
from fake_worker import make_leaf


@pytest.fixture
def leaf_folder(tmp_path: Path) -> tuple[Path, bytes, bytes, str]:
    leaf = make_leaf()
    descriptor = json.dumps(
        {
            "endpoint": "https://127.0.0.1:4433",
            "instance_id": "inst_1",
            "pid": 42,
            "api_version": "v1alpha1",
            "certificate_sha256": leaf.sha256,
        }
    ).encode()
    d = tmp_path / "api"
    d.mkdir(mode=0o700)
    for name, data in (("endpoint.json", descriptor), ("certificate.pem", leaf.cert_pem)):
        (d / name).write_bytes(data)
        os.chmod(d / name, 0o600)
    return d, descriptor, leaf.cert_pem, leaf.sha256


def _fed_fifo(path: Path, content: bytes) -> int:
    """Replaces ``path`` with a FIFO already holding ``content``; returns the writer's fd."""
    path.unlink()
    os.mkfifo(path, 0o600)
    writer = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    os.write(writer, content)
    return writer


@pytest.mark.parametrize(
    ("name", "error"),
    [("endpoint.json", DescriptorError), ("certificate.pem", CertificateError)],
)
def test_a_fifo_holding_the_genuine_bytes_is_refused(
    leaf_folder: tuple[Path, bytes, bytes, str], name: str, error: type[Exception]
) -> None:
    d, descriptor, pem, pin = leaf_folder
    writer = _fed_fifo(d / name, descriptor if name == "endpoint.json" else pem)
    try:
        with pytest.raises(error, match="regular file"):
            discover(d, expected_instance_id="inst_1", expected_certificate_sha256=pin)
    finally:
        os.close(writer)


@pytest.mark.parametrize(
    ("name", "error"),
    [("endpoint.json", DescriptorError), ("certificate.pem", CertificateError)],
)
def test_a_directory_in_place_of_a_file_is_a_typed_error(
    leaf_folder: tuple[Path, bytes, bytes, str], name: str, error: type[Exception]
) -> None:
    d, _, _, pin = leaf_folder
    (d / name).unlink()
    (d / name).mkdir(mode=0o700)
    with pytest.raises(error):
        discover(d, expected_instance_id="inst_1", expected_certificate_sha256=pin)
