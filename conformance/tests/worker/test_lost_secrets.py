"""A state folder that lost one of its secrets is refused, not given a new one (W1, W3, W5).

The TLS seed, the journal key and the credential verifier key are created with the folder;
everything stored later depends on them. When one goes missing (a partial backup restore, a
slip of ``rm``), a replacement would silently change the worker's pin (W1), make every
enrolled credential fail (W3) or fail every journal record as tampered (W5). The worker used
to mint the replacement and carry on (or, for the journal key, blame tampering and leave the
new key behind); now start-up and enrolment stop with the state exit code, name the missing
file, and leave the folder as it was, so restoring the file brings everything back.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from cli_helpers import cli, folder_fingerprint

from conftest import pb, script

S = pb.runs
SERVE = [sys.executable, "-m", "colossus_reference_worker.cli", "serve"]


@pytest.fixture
def used(make_worker):
    """A stopped worker with a finished run, its pin and instance ID."""
    worker = make_worker()
    client = worker.client("app1")
    run_id = client.create("k1", script("say kept")).run.run_id
    client.wait_status(run_id, S.RUN_STATUS_SUCCEEDED)
    identity = (worker.descriptor["instance_id"], worker.descriptor["certificate_sha256"])
    worker.stop()
    return worker, run_id, identity


@pytest.mark.parametrize("name", ["tls-seed", "journal-key", "verifier-key"])
def test_a_lost_secret_stops_start_up_and_enrolment_until_restored(used, name):
    worker, run_id, identity = used
    secret = worker.state / name
    saved = secret.read_bytes()
    secret.unlink()
    before = folder_fingerprint(worker.root)
    started = subprocess.run([*SERVE, "--public-api-dir", str(worker.public)],
                             capture_output=True, text=True, timeout=60)
    assert started.returncode == 4, started.stderr  # state folder unusable
    assert str(secret) in started.stderr and "missing" in started.stderr
    assert "Traceback" not in started.stderr
    enrolled = cli("enroll", "app3", "--public-api-dir", str(worker.public), "--keyring-service",
                   "colossus-test-never-used")
    assert enrolled.returncode == 4 and str(secret) in enrolled.stderr
    assert folder_fingerprint(worker.root) == before  # nothing created, nothing replaced
    assert not (worker.public / "endpoint.json").exists()
    # Putting the file back restores the same worker, credentials and runs.
    secret.write_bytes(saved)
    secret.chmod(0o600)
    worker.start()
    assert (worker.descriptor["instance_id"], worker.descriptor["certificate_sha256"]) == identity
    run = worker.client("app1").get(run_id)
    assert run.status == S.RUN_STATUS_SUCCEEDED and run.last_sequence == 3


def test_a_lost_page_token_key_is_simply_replaced(used):
    # Page tokens are short-lived: a new key only ends traversals already under way.
    worker, run_id, identity = used
    (worker.state / "page-token-key").unlink()
    worker.start()
    client = worker.client("app1")
    page = client.runs.ListRuns(pb.rs.ListRunsRequest(), metadata=client.md, timeout=10)
    assert [r.run_id for r in page.runs] == [run_id]
    assert (worker.descriptor["instance_id"], worker.descriptor["certificate_sha256"]) == identity
