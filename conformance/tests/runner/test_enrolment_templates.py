"""Runners of a parallel run start their workers from one enrolment per configuration."""

import threading

import pytest

from colossus_conformance import enrolment_templates
from colossus_conformance.enrolment_templates import EnrolmentTemplates
from colossus_conformance.worker import Enrolment, ManagedWorker

APPS = {"full": {"scopes": ["runs:read"]}, "reader": {"scopes": ["runs:read"], "roles": ["default"]}}


@pytest.fixture
def enrolments(monkeypatch):
    """Counts enrolments; each writes a credential file into the worker's state folder."""
    calls = []
    lock = threading.Lock()

    def fake_enrol(self, application_id, grant):
        with lock:
            calls.append((self.name, application_id))
        (self.state_dir / f"credential-{application_id}").write_text(f"{application_id} in {self.root}")
        bearer = "cb1_" + "x" * 43
        enrolment = Enrolment(application_id, "cred-" + application_id, "inst-1", "ab" * 32, bearer)
        self.enrolments[application_id] = enrolment
        self.instance_id, self.certificate_sha256 = enrolment.instance_id, enrolment.certificate_sha256
        return enrolment

    monkeypatch.setattr(enrolment_templates.ManagedWorker, "enrol", fake_enrol)
    return calls


def test_each_configuration_is_enrolled_once_and_copied_into_every_worker(tmp_path, enrolments):
    templates = EnrolmentTemplates(tmp_path, tmp_path / "logs")
    workers = [ManagedWorker("daemon", tmp_path, tmp_path) for _ in range(3)]
    threads = [threading.Thread(target=templates.fill, args=(w, APPS, None)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(enrolments) == [("daemon", "full"), ("daemon", "reader")]
    for w in workers:
        assert sorted(w.enrolments) == ["full", "reader"]
        assert (w.state_dir / "credential-full").is_file()
        assert w.instance_id == "inst-1"
    # Copies are independent: what one worker writes, no other sees.
    (workers[0].state_dir / "credential-full").write_text("changed")
    assert (workers[1].state_dir / "credential-full").read_text() != "changed"
    templates.close()
    assert not templates.root.exists()


def test_other_configurations_and_application_sets_get_templates_of_their_own(tmp_path, enrolments):
    templates = EnrolmentTemplates(tmp_path, tmp_path / "logs")
    templates.fill(ManagedWorker("daemon", tmp_path, tmp_path), APPS, None)
    templates.fill(ManagedWorker("tls12", tmp_path, tmp_path), APPS, None)
    templates.fill(ManagedWorker("daemon", tmp_path, tmp_path), {"full": APPS["full"]}, None)
    templates.fill(ManagedWorker("daemon", tmp_path, tmp_path), APPS, None)
    assert len(enrolments) == 5  # daemon (2), tls12 (2), daemon with one application (1)
    templates.close()
