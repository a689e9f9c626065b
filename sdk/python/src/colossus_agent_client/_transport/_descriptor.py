"""Strict readers for the daemon's discovery files (C1, C2) and the shared token grammars.

The descriptor and the certificate file are readiness hints, never trust anchors: they
are only accepted when they agree with the identity provisioned at enrolment (C3), which
the caller passes in separately.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .._errors import CertificateError, DescriptorError, PinMismatchError
from .._reasons import LocalReason
from ._certificate import LeafCertificate, parse_leaf_certificate
from ._owner_only_file import check_public_api_dir, read_owner_only_file
from ._strict_json import load_json_object

ENDPOINT_FILE: Final = "endpoint.json"
CERTIFICATE_FILE: Final = "certificate.pem"
MAX_DESCRIPTOR_BYTES: Final = 4 * 1024
MAX_CERTIFICATE_BYTES: Final = 16 * 1024
API_VERSION: Final = "v1alpha1"

_PIN_RE: Final = re.compile(r"[0-9a-f]{64}")
_OPAQUE_ID_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ENDPOINT_RE: Final = re.compile(r"https://(127\.0\.0\.1|\[::1\]):([1-9][0-9]{0,4})")
# A process ID is a signed 32-bit pid_t, so a larger pid cannot name a real process.
_MAX_PID: Final = 2**31 - 1
_DESCRIPTOR_KEYS: Final = frozenset(
    {"endpoint", "instance_id", "pid", "api_version", "certificate_sha256"}
)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A literal loopback TLS endpoint."""

    host: str
    """``127.0.0.1`` or ``::1`` (no brackets)."""
    port: int

    @property
    def grpc_target(self) -> str:
        """The target string grpcio expects."""
        return f"ipv6:[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Descriptor:
    """A validated ``endpoint.json``."""

    endpoint: Endpoint
    instance_id: str
    pid: int
    api_version: str
    certificate_sha256: str


def is_pin(value: object) -> bool:
    """True for 64 lower-case hex characters."""
    return isinstance(value, str) and _PIN_RE.fullmatch(value) is not None


def is_opaque_id(value: object) -> bool:
    """True for 1-64 characters of ``[A-Za-z0-9_-]``."""
    return isinstance(value, str) and _OPAQUE_ID_RE.fullmatch(value) is not None


def parse_endpoint(value: object, *, error: type[Exception] = DescriptorError) -> Endpoint:
    """Accepts exactly ``https://127.0.0.1:PORT`` or ``https://[::1]:PORT``."""
    if not isinstance(value, str):
        raise error("endpoint must be a string")
    match = _ENDPOINT_RE.fullmatch(value)
    if match is None:
        raise error(
            "endpoint must be https://127.0.0.1:PORT or https://[::1]:PORT with nothing else"
        )
    port = int(match.group(2))
    if not 1 <= port <= 65535:
        raise error("endpoint port is out of range")
    host = "::1" if match.group(1) == "[::1]" else "127.0.0.1"
    return Endpoint(host=host, port=port)


def parse_descriptor(raw: bytes) -> Descriptor:
    """Validates the bytes of ``endpoint.json`` (C1)."""
    if len(raw) > MAX_DESCRIPTOR_BYTES:
        raise DescriptorError("endpoint.json is larger than 4 KiB")
    obj = load_json_object(raw, what="endpoint.json", error=DescriptorError)
    keys = set(obj)
    if keys != _DESCRIPTOR_KEYS:
        unknown = sorted(keys - _DESCRIPTOR_KEYS)
        missing = sorted(_DESCRIPTOR_KEYS - keys)
        raise DescriptorError(
            f"endpoint.json members are wrong (unknown: {unknown}, missing: {missing})"
        )
    endpoint = parse_endpoint(obj["endpoint"])
    instance_id = obj["instance_id"]
    if not is_opaque_id(instance_id):
        raise DescriptorError("instance_id must be 1-64 characters of [A-Za-z0-9_-]")
    pid = obj["pid"]
    if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid <= _MAX_PID:
        raise DescriptorError(f"pid must be an integer from 1 to {_MAX_PID}")
    if obj["api_version"] != API_VERSION:
        raise DescriptorError(f"api_version must be {API_VERSION!r}")
    pin = obj["certificate_sha256"]
    if not is_pin(pin):
        raise DescriptorError("certificate_sha256 must be 64 lower-case hex characters")
    return Descriptor(
        endpoint=endpoint,
        instance_id=str(instance_id),
        pid=pid,
        api_version=API_VERSION,
        certificate_sha256=str(pin),
    )


@dataclass(frozen=True, slots=True)
class DiscoveredWorker:
    """A descriptor and certificate that agree with each other and with the expectation."""

    descriptor: Descriptor
    certificate: LeafCertificate


def discover(
    public_api_dir: Path, *, expected_instance_id: str, expected_certificate_sha256: str
) -> DiscoveredWorker:
    """Reads and cross-checks the two discovery files against the provisioned identity.

    The expected values come from the caller only (C3); nothing read here can change them.
    """
    check_public_api_dir(public_api_dir)
    descriptor = parse_descriptor(
        read_owner_only_file(public_api_dir / ENDPOINT_FILE, MAX_DESCRIPTOR_BYTES, DescriptorError)
    )
    # Pins and instance IDs are public identifiers, so both sides are shown.
    if descriptor.certificate_sha256 != expected_certificate_sha256:
        raise PinMismatchError(
            "endpoint.json names a certificate other than the provisioned pin "
            f"(expected {expected_certificate_sha256}, found {descriptor.certificate_sha256})",
            metadata={
                "expected": expected_certificate_sha256,
                "actual": descriptor.certificate_sha256,
            },
        )
    if descriptor.instance_id != expected_instance_id:
        raise PinMismatchError(
            "endpoint.json names an instance other than the provisioned one "
            f"(expected {expected_instance_id}, found {descriptor.instance_id})",
            reason=LocalReason.INSTANCE_MISMATCH,
            metadata={"expected": expected_instance_id, "actual": descriptor.instance_id},
        )
    pem = read_owner_only_file(
        public_api_dir / CERTIFICATE_FILE, MAX_CERTIFICATE_BYTES, CertificateError
    )
    certificate = parse_leaf_certificate(pem, endpoint_host=descriptor.endpoint.host)
    if certificate.sha256 != expected_certificate_sha256:
        raise PinMismatchError(
            "certificate.pem does not hash to the provisioned pin "
            f"(expected {expected_certificate_sha256}, found {certificate.sha256})",
            metadata={"expected": expected_certificate_sha256, "actual": certificate.sha256},
        )
    return DiscoveredWorker(descriptor=descriptor, certificate=certificate)
