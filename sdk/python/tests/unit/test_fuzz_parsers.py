"""Every parser of untrusted input fails only with the SDK's typed errors (hypothesis).

The examples per parser are bounded (``max_examples``) so the suite stays quick; print the
counts with ``pytest tests/unit/test_fuzz_parsers.py --hypothesis-show-statistics``.
"""

from __future__ import annotations

import contextlib
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colossus_agent_client as colossus
from colossus_agent_client._sidecar_bootstrap import parse_reply
from colossus_agent_client._transport._bearer import Bearer
from colossus_agent_client._transport._certificate import parse_leaf_certificate, validate_leaf_der
from colossus_agent_client._transport._descriptor import parse_descriptor
from colossus_agent_client.testing import make_test_leaf

LEAF = make_test_leaf()
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=80),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=12,
)
_descriptor_keys = ["endpoint", "instance_id", "pid", "api_version", "certificate_sha256"]
_reply_keys = [
    "version",
    "endpoint",
    "instance_id",
    "api_version",
    "certificate_sha256",
    "certificate_pem",
    "credential_id",
    "bearer",
    "error",
]


def _near_valid(keys: list[str]) -> st.SearchStrategy[bytes]:
    """JSON objects over the parser's own member names with arbitrary values."""
    return st.dictionaries(
        st.sampled_from([*keys, "extra"]), _json_values, max_size=len(keys) + 1
    ).map(lambda obj: json.dumps(obj).encode())


@FUZZ
@given(st.binary(max_size=600) | _near_valid(_descriptor_keys))
def test_descriptor_parser(raw: bytes) -> None:
    with contextlib.suppress(colossus.DescriptorError):
        parse_descriptor(raw)


def _mutated_der(seed: int, flips: int) -> bytes:
    rng = random.Random(seed)
    der = bytearray(LEAF.der)
    for _ in range(flips):
        der[rng.randrange(len(der))] = rng.randrange(256)
    return bytes(der)


@FUZZ
@given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=1, max_value=6))
def test_certificate_parser_on_mutated_der(seed: int, flips: int) -> None:
    with contextlib.suppress(colossus.CertificateError):
        validate_leaf_der(_mutated_der(seed, flips), endpoint_host="127.0.0.1")


@FUZZ
@given(st.binary(max_size=800))
def test_certificate_parser_on_arbitrary_pem(body: bytes) -> None:
    import base64

    pem = (
        b"-----BEGIN CERTIFICATE-----\n" + base64.encodebytes(body) + b"-----END CERTIFICATE-----\n"
    )
    for candidate in (pem, body):
        with contextlib.suppress(colossus.CertificateError):
            parse_leaf_certificate(candidate)


@FUZZ
@given(st.text(max_size=300) | st.binary(max_size=64) | st.integers() | st.none())
def test_bearer_parser(value: object) -> None:
    try:
        bearer = Bearer(value)
    except colossus.CredentialError as exc:
        # Never echoed (short values can occur in the fixed message by chance).
        assert not isinstance(value, str) or len(value) < 8 or value not in str(exc)  # noqa: PT017
    else:
        assert isinstance(value, str) and value not in repr(bearer)


@FUZZ
@given(st.binary(max_size=600) | _near_valid(_reply_keys))
def test_sidecar_reply_parser(raw: bytes) -> None:
    with contextlib.suppress(colossus.SidecarError, colossus.PinMismatchError):
        parse_reply(raw)


def test_sidecar_reply_with_a_huge_integer_is_typed() -> None:
    raw = b'{"version": ' + b"9" * 5000 + b"}"
    with pytest.raises(colossus.SidecarError):
        parse_reply(raw)
