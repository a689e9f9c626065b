"""A keyring backend for tests only: stands in for the OS credential store.

It keeps entries in a JSON file named by ``TEST_KEYRING_FILE`` so a test can
read back what the worker stored. Selected with
``PYTHON_KEYRING_BACKEND=test_keyring_backend.FileKeyring``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend


class FileKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def _load(self) -> dict[str, str]:
        path = Path(os.environ["TEST_KEYRING_FILE"])
        return json.loads(path.read_text()) if path.exists() else {}

    def set_password(self, service: str, username: str, password: str) -> None:
        entries = self._load()
        entries[f"{service}/{username}"] = password
        Path(os.environ["TEST_KEYRING_FILE"]).write_text(json.dumps(entries))

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}/{username}")

    def delete_password(self, service: str, username: str) -> None:
        entries = self._load()
        entries.pop(f"{service}/{username}", None)
        Path(os.environ["TEST_KEYRING_FILE"]).write_text(json.dumps(entries))


def test_backend_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_KEYRING_FILE", str(tmp_path / "ring.json"))
    ring = FileKeyring()
    ring.set_password("svc", "acct", "value")
    assert ring.get_password("svc", "acct") == "value"
