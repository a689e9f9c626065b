"""Loads the worker's TLS identity (W1): a deterministic P-256 leaf (``tls_identity.py``).

A 32-byte seed in the state folder is the only input. The private scalar, the
certificate serial and the instance ID are derived from it with HKDF, and the
certificate is signed with deterministic ECDSA (RFC 6979), so the same seed
gives the byte-identical certificate, pin and instance ID on every start
(tls_derive.py). What a derivation gave is kept in the state folder under an HMAC
keyed by the seed, and later starts take it from there.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
from pathlib import Path

from .state import read_private_file, secret_file, write_private_file
from .tls_identity import TlsIdentity

# The derived identity, kept beside the seed: the derivation needs `cryptography`, whose
# import alone costs a start about 70 ms of CPU, and test suites start hundreds of workers.
IDENTITY_CACHE = "tls-identity"
# The cache is trusted only under an HMAC keyed by the seed (this label keeps that use of
# the seed apart from the derivation's), so a cache left from another seed, or edited, is
# derived again; whoever can forge it can read the seed and derive the same identity.
_CACHE_LABEL = b"colossus-worker identity cache v1\0"
_CACHE_FIELDS = ("host", "instance_id", "certificate_pem", "private_key_pem", "certificate_sha256")


def load_identity(state_dir: Path, host: str = "127.0.0.1") -> TlsIdentity:
    """Load (creating on first use) the seed, and the identity it gives for ``host``."""
    seed = secret_file(state_dir / "tls-seed", 32)
    cached = _read_cache(state_dir, seed, host)
    if cached is not None:
        return cached
    from .tls_derive import derive_identity

    identity = derive_identity(seed, host, state_dir)
    payload = json.dumps({name: _text(getattr(identity, name)) for name in _CACHE_FIELDS},
                         sort_keys=True).encode()
    # Only time is lost when the folder refuses the cache: the next start derives again.
    with contextlib.suppress(OSError):
        write_private_file(state_dir / IDENTITY_CACHE, _mac(seed, payload).encode() + b"\n" + payload)
    return identity


def _text(value: str | bytes) -> str:
    return value.decode("ascii") if isinstance(value, bytes) else value


def _mac(seed: bytes, payload: bytes) -> str:
    return hmac.new(seed, _CACHE_LABEL + payload, hashlib.sha256).hexdigest()


def _read_cache(state_dir: Path, seed: bytes, host: str) -> TlsIdentity | None:
    """The cached identity when the cache is for this seed and host, else None."""
    data = read_private_file(state_dir / IDENTITY_CACHE)
    if data is None:
        return None
    mac, _, payload = data.partition(b"\n")
    if not hmac.compare_digest(mac, _mac(seed, payload).encode()):
        return None
    fields = json.loads(payload)
    if (not isinstance(fields, dict) or set(fields) != set(_CACHE_FIELDS)
            or not all(isinstance(v, str) for v in fields.values()) or fields["host"] != host):
        return None
    return TlsIdentity(
        instance_id=fields["instance_id"],
        host=host,
        certificate_pem=fields["certificate_pem"].encode("ascii"),
        private_key_pem=fields["private_key_pem"].encode("ascii"),
        certificate_sha256=fields["certificate_sha256"],
        scratch_dir=state_dir,
    )
