"""A rotation whose hand-over fails leaves the old credential working (W3).

Rotation activates the new credential before it revokes the old one, so an application
is never left without a bearer that authenticates. A planted rotation that revoked
first passed the suite, which only rotated with a hand-over that succeeds.
"""

from __future__ import annotations

import json
import os
import subprocess

from test_security import CLI, _enroll_cli

from conftest import pb


def test_a_failed_rotation_keeps_the_old_credential_active(make_worker):
    worker = make_worker(apps=(), start=False)
    out, bearer = _enroll_cli(worker, "--enroll-application", "rot-app", "--scope", "runs:read")
    assert out.returncode == 0, out.stderr
    old = json.loads(out.stdout)["credential_id"]
    env = {**os.environ, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    rotated = subprocess.run(
        [*CLI, "--public-api-dir", str(worker.public), "--rotate-credential", old,
         "--keyring-service", "colossus-test"],
        capture_output=True, text=True, timeout=30, env=env)
    assert rotated.returncode == 5 and "stays pending" in rotated.stderr
    worker.start()
    c = worker.client(bearer)
    assert c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md).server_info
