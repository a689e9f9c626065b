"""The sidecar bootstrap (W16) as a parent sees it: pipes in, one reply out, a SIDECAR worker."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import ssl
import struct
import subprocess
import tempfile

from colossus_agent_client.api.v1alpha1 import system_pb2 as system

from ...worker import ALL_SCOPES
from ..catalogue import case, expect, expect_equal
from ..context import CaseContext
from ..wire import Api

SECONDS = 30.0
REPLY = [
    "api_version",
    "bearer",
    "certificate_pem",
    "certificate_sha256",
    "credential_id",
    "endpoint",
    "instance_id",
    "version",
]


def _frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return struct.pack(">I", len(body)) + body


def _read_exact(fd: int, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            raise EOFError("the sidecar closed its reply pipe")
        data += chunk
    return data


def _bootstrap(argv_for: object, state_dir: str) -> tuple[subprocess.Popen[bytes], int, dict[str, object]]:
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    argv = argv_for(to_child_r, from_child_w)  # type: ignore[operator]
    proc = subprocess.Popen(
        argv,
        pass_fds=(to_child_r, from_child_w),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(to_child_r)
    os.close(from_child_w)
    os.write(
        to_child_w,
        _frame(
            {
                "version": 1,
                "state_dir": state_dir,
                "application_id": "side",
                "grant": {"scopes": list(ALL_SCOPES), "roles": ["default"], "tools": []},
            }
        ),
    )
    try:
        (length,) = struct.unpack(">I", _read_exact(from_child_r, 4))
        reply = json.loads(_read_exact(from_child_r, min(length, 65536)))
    finally:
        os.close(from_child_r)
    return proc, to_child_w, reply


@case(
    "sidecar.bootstrap",
    ["W16"],
    "a sidecar answers its pipe with a valid reply, serves as SIDECAR, and stops when the pipe closes",
    needs=["sidecar"],
)
async def bootstrap(ctx: CaseContext) -> None:
    with tempfile.TemporaryDirectory(prefix="server-sidecar-", dir=ctx.worker.root) as state_dir:
        os.chmod(state_dir, 0o700)
        proc, pipe, reply = await asyncio.to_thread(_bootstrap, ctx.worker.manifest.sidecar_argv, state_dir)
        try:
            expect_equal(sorted(reply), REPLY, "reply members")
            der = ssl.PEM_cert_to_DER_cert(str(reply["certificate_pem"]))
            expect_equal(hashlib.sha256(der).hexdigest(), reply["certificate_sha256"], "reply pin")
            endpoint = str(reply["endpoint"])
            expect(endpoint.startswith(("https://127.0.0.1:", "https://[::1]:")), f"endpoint {endpoint}")
            host, port = endpoint.removeprefix("https://").rsplit(":", 1)
            api = Api(host.strip("[]"), int(port), str(reply["bearer"]))
            try:
                info = (
                    await api.unary(
                        "SystemService/GetServerInfo",
                        system.GetServerInfoRequest(),
                        system.GetServerInfoResponse,
                    )
                ).server_info
            finally:
                api.close()
            expect_equal(info.deployment_mode, system.DEPLOYMENT_MODE_SIDECAR, "deployment_mode")
            expect_equal(info.instance_id, reply["instance_id"], "instance_id")
        finally:
            os.close(pipe)
            code = await asyncio.to_thread(proc.wait, SECONDS)
        expect_equal(code, 0, "exit status after the request pipe closed")
