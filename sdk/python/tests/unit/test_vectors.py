"""The shared parser vectors of ``conformance/vectors/`` (see its README).

Every SDK runs the same vectors; a vector this SDK judges differently from its
``expect`` is a bug here or in the vector.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from colossus_agent_client import CredentialError, SidecarError, TrustError
from colossus_agent_client._sidecar_bootstrap import parse_reply
from colossus_agent_client._transport._bearer import Bearer
from colossus_agent_client._transport._certificate import parse_leaf_certificate
from colossus_agent_client._transport._descriptor import parse_descriptor, parse_endpoint

VECTORS = Path(__file__).resolve().parents[4] / "conformance" / "vectors"

# The first matching class decides the protocol error kind (same order as the client).
KINDS: list[tuple[type[BaseException], str]] = [
    (TrustError, "trust"),
    (CredentialError, "credential"),
    (SidecarError, "sidecar"),
]

PARSERS: dict[str, Callable[[dict[str, Any]], object]] = {
    "descriptor": lambda v: parse_descriptor(v["text"].encode("utf-8")),
    "endpoint": lambda v: parse_endpoint(v["endpoint"]),
    "certificate": lambda v: parse_leaf_certificate(
        v["pem"].encode("utf-8"), endpoint_host=v["host"]
    ),
    "bearer": lambda v: Bearer(v["bearer"]),
    "bootstrap_reply": lambda v: parse_reply(v["text"].encode("utf-8")),
}


def _load() -> list[Any]:
    params = []
    for path in sorted(VECTORS.glob("*.json")):
        document = json.loads(path.read_text())
        for vector in document["vectors"]:
            params.append(
                pytest.param(document["kind"], vector, id=f"{path.stem}: {vector['name']}")
            )
    return params


def test_every_kind_has_vectors() -> None:
    kinds = {json.loads(p.read_text())["kind"] for p in VECTORS.glob("*.json")}
    assert kinds == set(PARSERS)


@pytest.mark.parametrize(("kind", "vector"), _load())
def test_vector(kind: str, vector: dict[str, Any]) -> None:
    parse = PARSERS[kind]
    if vector["expect"] == "accept":
        parse(vector)
        return
    with pytest.raises((TrustError, CredentialError, SidecarError)) as caught:
        parse(vector)
    got = next(
        (name for cls, name in KINDS if isinstance(caught.value, cls)), type(caught.value).__name__
    )
    assert got == vector["expect"], (
        f"{vector['name']}: expected {vector['expect']}, got {got}: {caught.value}"
    )
    # The local reason is the same in every SDK (docs/requirements.md, S9); local refusals
    # carry no status code.
    assert caught.value.reason == vector["reason"], (
        f"{vector['name']}: expected reason {vector['reason']}, got {caught.value.reason}"
    )
    assert caught.value.code is None
