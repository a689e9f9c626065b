"""Unit tests of the sidecar bootstrap framing and validation (W16)."""

from __future__ import annotations

import json
import os
import struct

import pytest

from colossus_reference_worker.sidecar.protocol import (
    MAX_MESSAGE_BYTES,
    BootstrapError,
    encode_frame,
    parse_request,
    read_frame,
)


@pytest.fixture
def state_dir(tmp_path):
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    os.chmod(d, 0o700)
    return str(d)


def good(state_dir):
    return {
        "version": 1,
        "state_dir": state_dir,
        "application_id": "my-app",
        "grant": {"scopes": ["runs:execute", "runs:read"], "roles": ["default"], "tools": []},
    }


def raw(obj):
    return json.dumps(obj).encode()


def test_accepts_the_documented_request(state_dir):
    req = parse_request(raw(good(state_dir)))
    assert req.application_id == "my-app"
    assert req.grant.scopes == ("runs:execute", "runs:read")
    assert req.grant.roles == ("default",)


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda o: o.update(version=3), "version_unsupported"),
        (lambda o: o.update(version=2), "bootstrap_invalid"),  # 2 needs execution_boundary
        (lambda o: o.update(execution_boundary="full_access"), "bootstrap_invalid"),  # not in 1
        (lambda o: o.update(version=True), "bootstrap_invalid"),
        (lambda o: o.update(extra=1), "bootstrap_invalid"),
        (lambda o: o.pop("grant"), "bootstrap_invalid"),
        (lambda o: o["grant"].update(extra=[]), "bootstrap_invalid"),
        (lambda o: o["grant"].pop("tools"), "bootstrap_invalid"),
        (lambda o: o.update(application_id="a/b"), "bootstrap_invalid"),
        (lambda o: o.update(application_id=""), "bootstrap_invalid"),
        (lambda o: o["grant"].update(scopes=["runs:everything"]), "grant_invalid"),
        (lambda o: o["grant"].update(scopes=["runs:read", "runs:read"]), "grant_invalid"),
        (lambda o: o["grant"].update(roles=["bad role"]), "grant_invalid"),
        (lambda o: o.update(state_dir="relative/dir"), "state_dir_invalid"),
        (lambda o: o.update(state_dir="/nonexistent/colossus"), "state_dir_invalid"),
    ],
)
def test_refuses_bad_requests(state_dir, mutate, code):
    obj = good(state_dir)
    mutate(obj)
    with pytest.raises(BootstrapError) as info:
        parse_request(raw(obj))
    assert info.value.code == code


def test_refuses_loose_state_dir(state_dir):
    os.chmod(state_dir, 0o755)
    with pytest.raises(BootstrapError) as info:
        parse_request(raw(good(state_dir)))
    assert info.value.code == "state_dir_invalid"


@pytest.mark.parametrize("mode", [0o750, 0o710, 0o701, 0o770, 0o707])
def test_refuses_any_group_or_other_access(state_dir, mode):
    os.chmod(state_dir, mode)
    with pytest.raises(BootstrapError) as info:
        parse_request(raw(good(state_dir)))
    assert info.value.code == "state_dir_invalid"


def test_refuses_a_relative_state_dir_even_when_it_exists(state_dir, monkeypatch):
    monkeypatch.chdir(os.path.dirname(state_dir))
    with pytest.raises(BootstrapError) as info:
        parse_request(raw(good(os.path.basename(state_dir))))
    assert info.value.code == "state_dir_invalid"


def test_grant_lists_hold_at_most_64_entries(state_dir):
    obj = good(state_dir)
    obj["grant"]["roles"] = [f"role{i}" for i in range(64)]
    obj["grant"]["tools"] = [f"tool{i}" for i in range(64)]
    req = parse_request(raw(obj))
    assert len(req.grant.roles) == len(req.grant.tools) == 64
    for member in ("roles", "tools"):
        over = good(state_dir)
        over["grant"][member] = [f"name{i}" for i in range(65)]
        with pytest.raises(BootstrapError) as info:
            parse_request(raw(over))
        assert info.value.code == "grant_invalid"


def test_refuses_symlinked_state_dir(state_dir, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(state_dir)
    with pytest.raises(BootstrapError) as info:
        parse_request(raw(good(str(link))))
    assert info.value.code == "state_dir_invalid"


def test_refuses_duplicate_members_and_non_json(state_dir):
    body = raw(good(state_dir))[:-1] + b', "version": 1}'
    with pytest.raises(BootstrapError):
        parse_request(body)
    for junk in (b"\xff", b"[]", b"NaN", b""):
        with pytest.raises(BootstrapError):
            parse_request(junk)


def test_framing_round_trip_and_cap():
    r, w = os.pipe()
    try:
        os.write(w, encode_frame({"a": 1}))
        assert json.loads(read_frame(r, timeout=2)) == {"a": 1}
        os.write(w, struct.pack(">I", MAX_MESSAGE_BYTES + 1))
        with pytest.raises(BootstrapError) as info:
            read_frame(r, timeout=2)
        assert info.value.code == "bootstrap_too_large"
        os.write(w, struct.pack(">I", 10) + b"{}")
        os.close(w)
        w = -1
        with pytest.raises(BootstrapError) as info:
            read_frame(r, timeout=2)
        assert info.value.code == "bootstrap_truncated"
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


def test_framing_times_out():
    r, w = os.pipe()
    try:
        with pytest.raises(BootstrapError) as info:
            read_frame(r, timeout=0.2)
        assert info.value.code == "bootstrap_timeout"
    finally:
        os.close(r)
        os.close(w)


def test_version_2_carries_the_execution_boundary_and_offline_hides_network_tools(state_dir):
    """B15: the boundary is its own member, never inferred from the grant."""
    obj = good(state_dir)
    obj.update(version=2, execution_boundary="offline_isolated")
    obj["grant"]["tools"] = ["filesystem.read", "web.fetch", "network.http", "docs.fetch"]
    req = parse_request(raw(obj))
    assert (req.version, req.execution_boundary) == (2, "offline_isolated")
    assert req.effective_tools() == ("filesystem.read",)
    obj.update(execution_boundary="full_access")
    assert parse_request(raw(obj)).effective_tools() == tuple(obj["grant"]["tools"])
    # Version 1 predates the member: the default host posture, never inferred from the grant.
    assert parse_request(raw(good(state_dir))).execution_boundary == "full_access"


@pytest.mark.parametrize(("boundary", "code"), [
    ("workspace_isolated", "boundary_unsupported"),  # no platform sandbox here: fail closed
    ("air_gapped", "bootstrap_invalid"),
    (None, "bootstrap_invalid"),
])
def test_version_2_refuses_a_boundary_it_cannot_serve(state_dir, boundary, code):
    obj = good(state_dir)
    obj.update(version=2, execution_boundary=boundary)
    with pytest.raises(BootstrapError) as err:
        parse_request(raw(obj))
    assert (err.value.code, err.value.version) == (code, 2)
