"""Enrol once per worker configuration, then give every runner a copy of that state.

Each runner of a parallel run needs workers of its own, and a fresh worker needs every
application of its configuration enrolled first: one worker process per application
(W3: enrolment happens while the worker is stopped), about a dozen for the ``daemon``
configuration. With two runners per column that was over a hundred interpreter start-ups
per run, a third of the matrix's CPU time. A template is a stopped worker's state folder
right after those enrolments, made once per configuration and set of applications; each
runner's worker starts from a copy of it. The copies are independent (every runner's
worker writes only its own folder), so what one case does to its worker's state is seen
by no other runner. Copies share the template's identity and bearers, which no case
compares across runners.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from .worker import ManagedWorker


class EnrolmentTemplates:
    """Per-configuration enrolled state folders for the runners of one run (thread-safe)."""

    def __init__(self, scratch: Path | None, log_dir: Path):
        self.root = Path(tempfile.mkdtemp(prefix="colossus-templates-", dir=scratch))
        self.root.chmod(0o700)
        self.log_dir = log_dir
        self._lock = threading.Lock()
        self._made: dict[str, ManagedWorker] = {}

    def _template(
        self, configuration: str, applications: dict[str, dict[str, Any]], limits: dict[str, str] | None
    ) -> ManagedWorker:
        key = json.dumps([configuration, applications], sort_keys=True)
        with self._lock:
            template = self._made.get(key)
            if template is None:
                self.log_dir.mkdir(parents=True, exist_ok=True)
                template = ManagedWorker(configuration, self.root, self.log_dir, limits)
                for app, grant in sorted(applications.items()):
                    template.enrol(app, grant)
                self._made[key] = template
            return template

    def fill(
        self,
        worker: ManagedWorker,
        applications: dict[str, dict[str, Any]],
        limits: dict[str, str] | None,
    ) -> None:
        """Gives a stopped, never started ``worker`` the enrolled state of its template."""
        template = self._template(worker.name, applications, limits)
        for source, target in (
            (template.state_dir, worker.state_dir),
            (template.public_api_dir, worker.public_api_dir),
        ):
            shutil.copytree(source, target, dirs_exist_ok=True)
        worker.enrolments = dict(template.enrolments)
        worker.instance_id = template.instance_id
        worker.certificate_sha256 = template.certificate_sha256

    def bearers_by_log(self) -> dict[Path, list[str]]:
        """Each template's enrolment log and the bearers it must not contain (C5/W3)."""
        with self._lock:
            return {t.log_path: [e.bearer for e in t.enrolments.values()] for t in self._made.values()}

    def close(self) -> None:
        with self._lock:
            for template in self._made.values():
                template.stop()
            shutil.rmtree(self.root, ignore_errors=True)
