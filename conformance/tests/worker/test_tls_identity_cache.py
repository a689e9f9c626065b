"""The derived TLS identity kept beside the seed (W1): a start takes it from the state folder
only when it is exactly what the seed gives for that address; anything else is derived
again, so no cache can change the worker's certificate, key, pin or instance ID."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from colossus_reference_worker.tls import IDENTITY_CACHE, load_identity
from colossus_reference_worker.tls_derive import derive_identity
from colossus_reference_worker.tls_identity import TlsIdentity


@pytest.fixture
def state(tmp_path: Path) -> Path:
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    return folder


def derived(state: Path, host: str = "127.0.0.1") -> TlsIdentity:
    """What the seed gives, computed without the cache."""
    return derive_identity((state / "tls-seed").read_bytes(), host, state)


def fields(identity: TlsIdentity) -> dict[str, object]:
    return dataclasses.asdict(identity)


def test_a_later_start_takes_the_derived_identity_from_the_cache_without_cryptography(state: Path) -> None:
    first = load_identity(state)
    assert (state / IDENTITY_CACHE).stat().st_mode & 0o077 == 0
    assert fields(load_identity(state)) == fields(first) == fields(derived(state))
    probe = (
        "import sys; from pathlib import Path\n"
        "import colossus_reference_worker.server, colossus_reference_worker.faults\n"
        "import colossus_reference_worker.commands.serve\n"
        "from colossus_reference_worker.tls import load_identity\n"
        f"identity = load_identity(Path({str(state)!r}))\n"
        "print(identity.certificate_sha256, any(m.startswith('cryptography') for m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == [first.certificate_sha256, "False"]


@pytest.mark.parametrize("edit", ["payload", "mac", "truncate", "empty"])
def test_an_edited_cache_is_derived_again(state: Path, edit: str) -> None:
    genuine = fields(load_identity(state))
    cache = state / IDENTITY_CACHE
    mac, payload = cache.read_bytes().split(b"\n", 1)
    if edit == "payload":  # another instance ID under the old MAC
        data = json.loads(payload)
        data["instance_id"] = "wkr_" + "a" * 24
        cache.write_bytes(mac + b"\n" + json.dumps(data, sort_keys=True).encode())
    elif edit == "mac":
        cache.write_bytes(mac[:-1] + (b"0" if mac[-1:] != b"0" else b"1") + b"\n" + payload)
    elif edit == "truncate":
        cache.write_bytes(mac + b"\n" + payload[:-10])
    else:
        cache.write_bytes(b"")
    assert fields(load_identity(state)) == genuine
    assert fields(load_identity(state)) == genuine  # and the cache is whole again


def test_a_cache_from_another_seed_or_for_another_address_is_not_used(state: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    load_identity(other)
    load_identity(state)
    (state / IDENTITY_CACHE).write_bytes((other / IDENTITY_CACHE).read_bytes())
    mine = load_identity(state)
    assert fields(mine) == fields(derived(state))
    assert mine.certificate_sha256 != load_identity(other).certificate_sha256

    v6 = load_identity(state, "::1")
    assert v6.host == "::1" and fields(v6) == fields(derived(state, "::1"))
    assert v6.certificate_sha256 != mine.certificate_sha256  # the address is in the leaf
    assert v6.instance_id == mine.instance_id


def test_a_cache_readable_by_others_stops_the_start(state: Path) -> None:
    from colossus_reference_worker.state import StateError

    load_identity(state)
    (state / IDENTITY_CACHE).chmod(0o644)
    with pytest.raises(StateError, match="0600"):
        load_identity(state)
