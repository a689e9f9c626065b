"""Discovery files (W2) as a client finds them."""

from __future__ import annotations

import hashlib
import json
import os
import ssl
import stat

from ..catalogue import case, expect, expect_equal
from ..context import CaseContext

MEMBERS = ["api_version", "certificate_sha256", "endpoint", "instance_id", "pid"]


@case(
    "discovery.files-private-and-exact",
    ["W2", "W3"],
    "endpoint.json and certificate.pem are 0600 regular files in a 0700 folder and agree with enrolment",
)
async def files_private_and_exact(ctx: CaseContext) -> None:
    folder = ctx.worker.public_api_dir
    expect_equal(oct(os.stat(folder).st_mode & 0o777), "0o700", "public API folder mode")
    for name in ("endpoint.json", "certificate.pem"):
        st = os.lstat(folder / name)
        expect(stat.S_ISREG(st.st_mode), f"{name} is not a regular file")
        expect_equal(oct(st.st_mode & 0o777), "0o600", f"{name} mode")
        expect(st.st_size <= 16384, f"{name} is {st.st_size} bytes")
    descriptor = json.loads((folder / "endpoint.json").read_text())
    expect_equal(sorted(descriptor), MEMBERS, "endpoint.json members")
    enrolment = ctx.worker.enrolments["alpha"]
    expect_equal(descriptor["instance_id"], enrolment.instance_id, "descriptor instance_id")
    expect_equal(descriptor["certificate_sha256"], enrolment.certificate_sha256, "descriptor pin")
    expect_equal(descriptor["api_version"], "v1alpha1", "descriptor api_version")
    expect(
        ctx.worker.proc is not None and descriptor["pid"] == ctx.worker.proc.pid, "pid is not the worker's"
    )
    pem = (folder / "certificate.pem").read_text()
    expect_equal(pem.count("-----BEGIN CERTIFICATE-----"), 1, "certificate blocks in certificate.pem")
    expect_equal(
        hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest(),
        enrolment.certificate_sha256,
        "SHA-256 of certificate.pem",
    )
