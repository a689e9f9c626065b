"""Listener, discovery files, enrolment and authentication: W1-W4."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import socket
import ssl
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from raw_h2 import RawClient, frame

from conftest import expect_error, pb

OK = grpc.StatusCode
CLI = [sys.executable, "-m", "colossus_reference_worker.cli"]


def _tls_connect(worker, **ctx_kw):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cadata=worker.pem.decode())
    ctx.set_alpn_protocols(["h2"])
    for name, value in ctx_kw.items():
        setattr(ctx, name, value)
    host, port = worker.target.rsplit(":", 1)
    with (socket.create_connection((host, int(port)), timeout=5) as raw,
          ctx.wrap_socket(raw, server_hostname=host) as tls):
        return tls.version(), tls.selected_alpn_protocol(), tls.getpeercert(binary_form=True)


def test_tls13_only_and_certificate_shape(make_worker):
    worker = make_worker()
    version, alpn, der = _tls_connect(worker)
    assert (version, alpn) == ("TLSv1.3", "h2")
    assert hashlib.sha256(der).hexdigest() == worker.descriptor["certificate_sha256"]
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _tls_connect(worker, maximum_version=ssl.TLSVersion.TLSv1_2)
    cert = x509.load_pem_x509_certificate(worker.pem)
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
    assert cert.public_key().curve.name == "secp256r1"
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    # Still serving after the refused handshake.
    assert worker.client("app1").system.GetServerInfo(
        pb.sys.GetServerInfoRequest(), metadata=worker.client("app1").md).server_info


def test_discovery_files_and_stable_identity(make_worker):
    worker = make_worker()
    for name in ("endpoint.json", "certificate.pem"):
        mode = stat.S_IMODE(os.stat(worker.public / name).st_mode)
        assert mode == 0o600, name
    assert stat.S_IMODE(os.stat(worker.public).st_mode) == 0o700
    desc = worker.descriptor
    assert set(desc) == {"endpoint", "instance_id", "pid", "api_version", "certificate_sha256"}
    assert desc["endpoint"].startswith("https://127.0.0.1:") and desc["api_version"] == "v1alpha1"
    assert desc["pid"] == worker.proc.pid
    assert worker.pem.count(b"BEGIN CERTIFICATE") == 1 and b"PRIVATE" not in worker.pem
    pem, instance = worker.pem, desc["instance_id"]
    worker.stop()
    assert not (worker.public / "endpoint.json").exists()
    assert not (worker.public / "certificate.pem").exists()
    worker.start()
    assert worker.pem == pem and worker.descriptor["instance_id"] == instance
    c = worker.client("app1")
    info = c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md).server_info
    assert info.instance_id == instance


def test_shutdown_leaves_foreign_discovery_files(make_worker):
    worker = make_worker()
    (worker.public / "endpoint.json").unlink()
    (worker.public / "endpoint.json").write_text("{}")  # someone else's now
    worker.stop()
    assert (worker.public / "endpoint.json").read_text() == "{}"
    assert not (worker.public / "certificate.pem").exists()


def test_refuses_a_public_dir_with_wrong_mode(tmp_path):
    public = tmp_path / "pub"
    public.mkdir(mode=0o755)
    public.chmod(0o755)
    out = subprocess.run([*CLI, "--public-api-dir", str(public)], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 4
    assert out.stderr.count("\n") == 1 and "0700" in out.stderr


def test_server_info_advertises_every_default_limit(make_worker):
    worker = make_worker()
    c = worker.client("app1")
    info = c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md).server_info
    assert info.api_package == "colossus.api.v1alpha1" and info.api_version == "v1alpha1"
    assert info.api_major == 1 and info.deployment_mode == pb.sys.DEPLOYMENT_MODE_SHARED_DAEMON
    assert {"attachments.text", "plans.continue", "research", "delegation"} <= set(
        info.capabilities)
    assert "attachments.image_input" not in info.capabilities
    lim = info.limits
    assert (lim.max_active_runs, lim.max_active_runs_per_application) == (32, 8)
    assert (lim.create_rate.refill_per_second, lim.create_rate.burst) == (4, 16)
    assert (lim.create_rate_per_application.refill_per_second,
            lim.create_rate_per_application.burst) == (1, 4)
    assert (lim.max_watches, lim.max_watches_per_application) == (64, 8)
    assert (lim.max_concurrent_list_runs, lim.max_concurrent_list_runs_per_application) == (4, 1)
    assert lim.max_connections == 128 and lim.max_concurrent_streams_per_connection == 128
    assert (lim.max_request_bytes, lim.max_response_bytes) == (2 << 20, 4 << 20)
    assert lim.max_header_bytes == 16 << 10
    assert (lim.max_events_per_run, lim.reserved_lifecycle_events) == (4096, 3)
    assert (lim.max_input_parts, lim.max_input_bytes) == (128, 1 << 20)
    assert (lim.max_turns, lim.default_max_turns) == (100, 20)
    assert (lim.max_list_page_size, lim.max_list_status_filters) == (3, 9)
    assert lim.handshake_timeout.seconds == 5 and lim.max_connection_age.seconds == 900


def test_authentication_failures(make_worker):
    worker = make_worker(apps=("app1", "narrow"))
    from conftest import enroll_direct

    worker.stop()
    _, pending = enroll_direct(worker.state, "app1", activate=False)
    revoked_id, revoked = enroll_direct(worker.state, "app1")
    _, narrow = enroll_direct(worker.state, "app1", scopes=("runs:read",))
    subprocess.run([*CLI, "--public-api-dir", str(worker.public), "--revoke-credential",
                    revoked_id], check=True, capture_output=True, timeout=30)
    worker.start()

    def info(bearer, md=None):
        c = worker.client(bearer)
        return lambda: c.system.GetServerInfo(pb.sys.GetServerInfoRequest(),
                                              metadata=md if md is not None else c.md)

    expect_error(info("x", md=[]), OK.UNAUTHENTICATED, "CREDENTIAL_MISSING")
    expect_error(info("cb1_" + "A" * 43), OK.UNAUTHENTICATED, "CREDENTIAL_INVALID")
    expect_error(info("x", md=[("authorization", "Basic abc")]), OK.UNAUTHENTICATED,
                 "CREDENTIAL_INVALID")
    expect_error(info(pending), OK.UNAUTHENTICATED, "CREDENTIAL_NOT_ACTIVE")
    expect_error(info(revoked), OK.UNAUTHENTICATED, "CREDENTIAL_REVOKED")
    info(narrow)()  # no scope needed
    c = worker.client(narrow)
    meta = expect_error(lambda: c.create(uuid.uuid4().hex), OK.PERMISSION_DENIED,
                        "SCOPE_MISSING")
    assert meta == {"scope": "runs:execute"}


def test_the_scheme_name_is_matched_without_regard_to_case(make_worker):
    """RFC 7235 makes the auth-scheme case-insensitive (and RFC 6750 allows several spaces
    after it); only the bearer itself is exact."""
    worker = make_worker()
    bearer = worker.bearers["app1"]
    c = worker.client(bearer)

    def info(value):
        return lambda: c.system.GetServerInfo(pb.sys.GetServerInfoRequest(),
                                              metadata=[("authorization", value)])

    for value in (f"bearer {bearer}", f"BEARER {bearer}", f"bEaReR {bearer}",
                  f"Bearer  {bearer}"):
        assert info(value)().server_info.instance_id
    # (grpcio itself refuses to send a tab in a header value.)
    for value in (f"Bearer{bearer}", f"Bearer {bearer.lower()}", f"Basic {bearer}",
                  f"Bearer {bearer}x", "Bearer"):
        expect_error(info(value), OK.UNAUTHENTICATED, "CREDENTIAL_INVALID")
    # A value that ends in a space makes the request malformed HTTP/2 (RFC 9113, 8.2.1): its
    # stream is reset before authentication (grpcio reports the reset as INTERNAL).
    with pytest.raises(grpc.RpcError) as caught:
        info("Bearer ")()
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert "RST_STREAM" in (caught.value.details() or "")


def _enroll_cli(worker, *extra):
    read_fd, write_fd = os.pipe()
    out = subprocess.run(
        [*CLI, "--public-api-dir", str(worker.public), *extra, "--bearer-fd", str(write_fd),
         "--output", "json"],
        pass_fds=(write_fd,), capture_output=True, text=True, timeout=30)
    os.close(write_fd)
    bearer = os.read(read_fd, 4096).decode()
    os.close(read_fd)
    return out, bearer.strip()


def test_cli_enrolment_rotation_and_secret_hygiene(make_worker):
    worker = make_worker(apps=(), start=False)
    out, bearer = _enroll_cli(worker, "--enroll-application", "cli-app", "--scope", "runs:read",
                              "--scope", "runs:execute", "--role", "default")
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    assert set(printed) == {"application_id", "credential_id", "instance_id",
                            "certificate_sha256"}
    assert bearer.startswith("cb1_") and len(bearer) == 47
    assert bearer not in out.stdout + out.stderr
    worker.start()
    assert worker.descriptor["instance_id"] == printed["instance_id"]
    assert worker.descriptor["certificate_sha256"] == printed["certificate_sha256"]
    c = worker.client(bearer)
    c.create("one", "x")
    locked, _ = _enroll_cli(worker, "--enroll-application", "x", "--scope", "runs:read")
    assert locked.returncode == 3
    worker.stop()
    rotated, new_bearer = _enroll_cli(worker, "--rotate-credential", printed["credential_id"])
    assert rotated.returncode == 0, rotated.stderr
    assert json.loads(rotated.stdout)["revoked_credential_id"] == printed["credential_id"]
    worker.start()
    expect_error(lambda: worker.client(bearer).get("x"), OK.UNAUTHENTICATED,
                 "CREDENTIAL_REVOKED")
    assert worker.client(new_bearer).create("one", "x").replayed  # same application
    worker.stop()
    # The bearers appear in no file of the state folder and in no log.
    for secret in (bearer, new_bearer):
        for path in [*worker.root.rglob("*")]:
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path.name


@pytest.mark.parametrize("argv", [
    ["--enroll-application", "a", "--scope", "runs:fly", "--bearer-fd", "1"],
    ["--enroll-application", "a", "--scope", "runs:read"],
    ["--limit", "nonsense=1"],
    ["--bogus"],
    ["--enroll-application", "a", "--scope", "runs:read", "--bearer-fd", "99"],
])
def test_bad_flags_give_one_line_errors(tmp_path, argv):
    public = tmp_path / "pub"
    public.mkdir(mode=0o700)
    out = subprocess.run([*CLI, "--public-api-dir", str(public), *argv], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("colossus-reference-worker:")


def test_delivery_failure_leaves_the_credential_pending(make_worker):
    worker = make_worker(apps=(), start=False)
    env = {**os.environ, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    out = subprocess.run(
        [*CLI, "--public-api-dir", str(worker.public), "--enroll-application", "k",
         "--scope", "runs:read", "--keyring-service", "colossus-test"],
        capture_output=True, text=True, timeout=30, env=env)
    assert out.returncode == 5 and "stays pending" in out.stderr
    listed = subprocess.run([*CLI, "--public-api-dir", str(worker.public),
                             "--list-credentials", "--output", "json"],
                            capture_output=True, text=True, timeout=30)
    assert json.loads(listed.stdout)["state"] == "pending"


def test_enrolment_into_the_credential_store(make_worker, tmp_path):
    worker = make_worker(apps=(), start=False)
    ring = tmp_path / "ring.json"
    env = {**os.environ, "PYTHON_KEYRING_BACKEND": "test_keyring_backend.FileKeyring",
           "TEST_KEYRING_FILE": str(ring),
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent),
                                          os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [*CLI, "--public-api-dir", str(worker.public), "--enroll-application", "ring-app",
         "--scope", "runs:read", "--keyring-service", "colossus-dev"],
        capture_output=True, text=True, timeout=30, env=env)
    assert out.returncode == 0, out.stderr
    bearer = json.loads(ring.read_text())["colossus-dev/ring-app"]
    assert bearer not in out.stdout + out.stderr
    worker.start()
    c = worker.client(bearer)
    assert c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md).server_info


def test_ipv6_loopback_listener(make_worker):
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this host")
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        pytest.skip("no IPv6 loopback on this host")
    worker = make_worker("--host", "::1")
    assert worker.descriptor["endpoint"].startswith("https://[::1]:")
    cert = x509.load_pem_x509_certificate(worker.pem)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("::1")]
    c = worker.client("app1")
    assert c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md).server_info


def test_state_files_are_owner_only(make_worker):
    worker = make_worker()
    worker.client("app1").create("k", "x")
    for path in worker.state.iterdir():
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode & 0o077 == 0, f"{path.name} has mode {oct(mode)}"


def test_two_authorization_headers_are_refused_whichever_applications_they_name(make_worker):
    # W4: a call carries one bearer. With two (a proxy adding its own, say) the worker
    # must not pick either: acting as the first, or the last, would let one header
    # decide which application's runs the call sees.
    worker = make_worker()
    one, two = worker.bearers["app1"], worker.bearers["app2"]
    c = worker.client(one)
    for bearers in ((one, two), (two, one), (one, one)):
        md = [("authorization", f"Bearer {bearer}") for bearer in bearers]
        expect_error(lambda md=md: c.system.GetServerInfo(
            pb.sys.GetServerInfoRequest(), metadata=md, timeout=10),
            OK.UNAUTHENTICATED, "CREDENTIAL_INVALID")
        expect_error(lambda md=md: c.runs.CreateRun(pb.rs.CreateRunRequest(
            idempotency_key="two-headers", input=[pb.runs.InputPart(text="x")]),
            metadata=md, timeout=10), OK.UNAUTHENTICATED, "CREDENTIAL_INVALID")
    for app in ("app1", "app2"):
        client = worker.client(app)
        assert not client.runs.ListRuns(pb.rs.ListRunsRequest(), metadata=client.md).runs
    # The same over a bare HTTP/2 connection, where the two are surely separate headers.
    raw = RawClient(worker.target, worker.pem, one)
    try:
        outcome = raw.call("/colossus.api.v1alpha1.SystemService/GetServerInfo", frame(b""),
                           extra=(("authorization", f"Bearer {two}"),))
    finally:
        raw.close()
    assert outcome.grpc_status == 16 and outcome.error_info()[0] == "CREDENTIAL_INVALID"
