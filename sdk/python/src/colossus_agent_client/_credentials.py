"""Credential providers: where the bearer comes from.

The SDK asks its provider for the bearer only after the endpoint, certificate, pin and
live handshake checks have passed. Two providers ship: the OS credential store
through ``keyring`` (an optional extra: ``pip install 'colossus-agent-client[keyring]'``), and an
in-memory holder for tests, sidecars and headless machines. There is no environment-variable
or file provider on purpose.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ._errors import CredentialError
from ._reasons import LocalReason
from ._transport._bearer import Bearer


@runtime_checkable
class CredentialProvider(Protocol):
    """Anything with a ``load_bearer()`` method: the source of the application's bearer.

    Implement it to fetch the bearer from your own secret store. The SDK calls it once
    per connection, only after every trust check passed, and never logs or shows the value.
    """

    def load_bearer(self) -> str:
        """Returns the raw bearer enrolment issued (32-256 visible ASCII characters).

        Returns:
            The bearer, without any ``Bearer`` prefix.

        Raises:
            Exception: any exception aborts the connection; the SDK reports it as a
                :class:`CredentialError` naming only the exception's type, never its text.
        """
        ...


class InMemoryCredentialProvider:
    """Keeps a bearer in process memory only. Its ``repr`` never shows the value.

    For tests, sidecars and headless machines (for example a bearer read from the worker's
    ``--bearer-fd`` pipe or from your own secret manager).

    Args:
        bearer: the bearer enrolment issued.

    Raises:
        CredentialError: ``bearer`` is not a well-formed bearer (the value is not quoted).
    """

    __slots__ = ("_bearer",)

    def __init__(self, bearer: str) -> None:
        self._bearer = Bearer(bearer)

    def load_bearer(self) -> str:
        """Returns the bearer given to the constructor."""
        return self._bearer.reveal()

    def __repr__(self) -> str:
        return "InMemoryCredentialProvider(<redacted>)"


class KeyringCredentialProvider:
    """Reads the bearer from the OS credential store through ``keyring``.

    Needs the optional ``keyring`` extra (``pip install 'colossus-agent-client[keyring]'``)
    and a keyring backend, which servers, CI and containers usually lack.

    Args:
        service: the keyring service name enrolment wrote the entry under.
        username: the entry's user name (usually the application ID).

    A generic keyring
    entry is a lookup namespace, not an application sandbox: on some platforms another
    process of the same OS user can read an unlocked store. Applications that must resist
    hostile same-user processes should supply their own platform-specific provider.
    """

    __slots__ = ("service", "username")

    def __init__(self, service: str, username: str) -> None:
        self.service = service
        self.username = username

    def load_bearer(self) -> str:
        """Reads the bearer from the keyring entry.

        Returns:
            The stored bearer.

        Raises:
            CredentialError: ``keyring`` is not installed or has no backend (with a hint
                for headless machines), the store failed, or the entry does not exist.
        """
        try:
            # Imported on first use: keyring is an optional extra, and loading its
            # backends is slow.
            import keyring  # noqa: PLC0415
            import keyring.errors  # noqa: PLC0415
        except ImportError:
            raise CredentialError(
                "KeyringCredentialProvider needs the optional 'keyring' package: install "
                "colossus-agent-client[keyring], or pass the bearer another way (for example "
                "InMemoryCredentialProvider, fed from the worker's --bearer-fd pipe)",
                reason="KEYRING_UNAVAILABLE",
            ) from None
        failure: str | None = None
        no_backend = False
        try:
            value = keyring.get_password(self.service, self.username)
        except keyring.errors.NoKeyringError:
            no_backend, value = True, None
        except keyring.errors.KeyringError as exc:
            failure, value = type(exc).__name__, None
        # Raised outside the handler, so the store's exception (whose text could quote the
        # secret) is not even kept as the new error's context.
        if no_backend:
            raise CredentialError(
                "no OS credential store is available (NoKeyringError; common on servers, CI "
                "and containers): install a keyring backend, or enrol with --bearer-fd and "
                "pass the bearer through InMemoryCredentialProvider",
                reason="KEYRING_UNAVAILABLE",
            )
        if failure is not None:
            raise CredentialError(
                f"the OS credential store failed: {failure}",
                reason=LocalReason.KEYRING_UNAVAILABLE,
            )
        if value is None:
            raise CredentialError(
                "no bearer is stored under this keyring service and username",
                reason=LocalReason.KEYRING_ENTRY_MISSING,
            )
        return str(value)

    def __repr__(self) -> str:
        return f"KeyringCredentialProvider(service={self.service!r}, username={self.username!r})"


def load_bearer(provider: CredentialProvider) -> Bearer:
    """Asks the provider and validates the grammar; never lets the value into an error.

    One rule in every SDK (docs/requirements.md, C8): the SDK's own providers raise their
    own :class:`CredentialError` with its catalogue reason, which stands; any exception of
    another provider (a ``CredentialError`` it built included: its text is the provider's)
    becomes ``PROVIDER_FAILED``, naming only the exception's type, never its text. Python
    is the one language whose tracebacks and ``logging`` print every chained cause, so
    here the provider's exception is not chained at all (neither ``__cause__`` nor
    ``__context__``): a logged ``CredentialError`` must not carry the secret (C5).
    """
    failure: type[BaseException] | None = None
    raw: object = None
    try:
        raw = provider.load_bearer()
    except CredentialError:
        if isinstance(provider, _OWN_PROVIDERS):
            raise
        failure = CredentialError
    except Exception as exc:
        failure = type(exc)
    if failure is not None:
        # Outside the handler: the provider's exception is not kept as context either.
        raise _provider_failed(failure)
    return Bearer(raw)


def _provider_failed(kind: type[BaseException]) -> CredentialError:
    return CredentialError(
        f"the credential provider failed: {kind.__name__}", reason=LocalReason.PROVIDER_FAILED
    )


_OWN_PROVIDERS = (InMemoryCredentialProvider, KeyringCredentialProvider)
