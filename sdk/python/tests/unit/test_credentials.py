"""C8: the keyring and in-memory providers."""

from __future__ import annotations

from collections.abc import Iterator

import keyring
import keyring.backend
import keyring.errors
import pytest

import colossus_agent_client as colossus
from colossus_agent_client._credentials import load_bearer
from fake_worker import BEARER


class MemoryKeyring(keyring.backend.KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}
        self.fail = False

    def get_password(self, service: str, username: str) -> str | None:
        if self.fail:
            raise keyring.errors.KeyringLocked("locked: " + BEARER)
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


@pytest.fixture
def store() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def test_keyring_provider_reads_the_named_entry(store: MemoryKeyring) -> None:
    store.set_password("colossus", "my-app", BEARER)
    provider = colossus.KeyringCredentialProvider("colossus", "my-app")
    assert isinstance(provider, colossus.CredentialProvider)
    assert load_bearer(provider).reveal() == BEARER
    assert "my-app" in repr(provider) and BEARER not in repr(provider)


def test_keyring_missing_entry_and_failures_are_credential_errors(store: MemoryKeyring) -> None:
    provider = colossus.KeyringCredentialProvider("colossus", "absent")
    with pytest.raises(colossus.CredentialError):
        load_bearer(provider)
    store.fail = True
    with pytest.raises(colossus.CredentialError) as info:
        load_bearer(colossus.KeyringCredentialProvider("colossus", "my-app"))
    assert BEARER not in str(info.value)
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_malformed_stored_bearer_is_refused(store: MemoryKeyring) -> None:
    store.set_password("colossus", "my-app", "short")
    with pytest.raises(colossus.CredentialError):
        load_bearer(colossus.KeyringCredentialProvider("colossus", "my-app"))


def test_in_memory_provider_validates_on_construction() -> None:
    with pytest.raises(colossus.CredentialError):
        colossus.InMemoryCredentialProvider("bad bearer with spaces and enough length....")
    assert colossus.InMemoryCredentialProvider(BEARER).load_bearer() == BEARER


@pytest.mark.parametrize(
    "raised",
    [
        RuntimeError("vault said " + BEARER),
        colossus.CredentialError("vault said " + BEARER, reason="KEYRING_ENTRY_MISSING"),
        colossus.TransportError("vault said " + BEARER),
    ],
    ids=["foreign", "a CredentialError it built", "an SDK error of another kind"],
)
def test_a_providers_own_error_is_reported_as_provider_failed(raised: Exception) -> None:
    # One rule in every SDK (docs/requirements.md, C8): the SDK's own credential error,
    # PROVIDER_FAILED, naming the exception's type only, its text in neither the message,
    # str nor repr; Python chains no cause, since tracebacks and logging print causes.
    class Provider:
        def load_bearer(self) -> str:
            raise raised

    with pytest.raises(colossus.CredentialError) as info:
        load_bearer(Provider())
    assert info.value.reason == "PROVIDER_FAILED" and info.value.code is None
    assert info.value.__cause__ is None and info.value.__context__ is None
    for shown in (info.value.message, str(info.value), repr(info.value)):
        assert "vault said" not in shown and BEARER not in shown
