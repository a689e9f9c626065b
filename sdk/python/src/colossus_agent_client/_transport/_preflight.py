"""The TLS 1.3 pre-flight handshake that backs C4.

grpcio's Python API cannot require TLS 1.3 and never shows the peer certificate, so
before the channel is used (and before the bearer is loaded) the SDK opens its own
connection to the same endpoint with Python's ``ssl`` module and checks what grpcio
cannot:

* the handshake negotiates TLS 1.3 (the context allows nothing else);
* the presented chain is exactly one certificate;
* that certificate's DER hashes to the provisioned pin, and the server proved
  possession of its key (the handshake's CertificateVerify, checked by OpenSSL).

At connect the verified connection is handed to the trust relay (``_relay.py``), which
carries grpcio's first connection over it; every later connection grpcio opens goes
through :func:`open_verified` again, on the relay's side.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

import grpc

from .._errors import PinMismatchError, TlsPolicyError, TransportError
from .._reasons import LocalReason
from ._certificate import LeafCertificate, sha256_hex
from ._descriptor import Endpoint
from ._version_probe import answers_tls12


class HandshakeDroppedError(TransportError):
    """The listener closed the connection mid-handshake and the probe found no TLS 1.2.

    Nothing proves a policy refusal, so this is a worker going away or restarting: the
    caller may try again (the relay's pre-flight does, within the connect timeout).
    """


@functools.lru_cache(maxsize=8)
def _tls13_context(anchor: LeafCertificate) -> ssl.SSLContext:
    # Built once per anchor: loading the trust store costs more client time than the rest
    # of the handshake. A context holds configuration only (the SDK never resumes a
    # session), so every pre-flight still receives and checks the full certificate.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.maximum_version = ssl.TLSVersion.TLSv1_3
    context.verify_mode = ssl.CERT_REQUIRED
    context.check_hostname = True
    context.load_verify_locations(cadata=anchor.pem.decode("ascii"))
    context.set_alpn_protocols(["h2"])
    return context


def _presented_chain(tls: Any) -> list[bytes] | None:
    """The chain exactly as the server sent it, or None when Python cannot tell.

    Python 3.13 exposes ``get_unverified_chain()``; 3.10-3.12 carry the same method on
    the private ``_sslobj`` of an ``SSLSocket`` / ``SSLObject``.
    """
    getter = getattr(tls, "get_unverified_chain", None)
    if getter is None:
        inner = getattr(tls, "_sslobj", None)
        getter = getattr(inner, "get_unverified_chain", None)
    if getter is None:
        return None
    chain = getter() or []
    result: list[bytes] = []
    for cert in chain:
        if isinstance(cert, bytes):
            result.append(cert)
        else:
            # _ssl.Certificate: public_bytes(format) with 1 = DER (ssl._ssl.ENCODING_DER)
            result.append(cert.public_bytes(ssl._ssl.ENCODING_DER))  # type: ignore[attr-defined]
    return result


def _check_session(tls: Any, expected_pin: str) -> str:
    version = tls.version()
    if version != "TLSv1.3":
        raise TlsPolicyError(
            f"the worker negotiated {version}, not TLS 1.3", reason=LocalReason.TLS_VERSION
        )
    if tls.session_reused:
        # Never offered by the SDK; a resumed session would show no certificate to check.
        raise TlsPolicyError("the pre-flight resumed an earlier TLS session")
    leaf = tls.getpeercert(binary_form=True)
    if not leaf:
        raise TlsPolicyError("the worker presented no certificate")
    chain = _presented_chain(tls)
    if chain is None:
        raise TlsPolicyError(
            "this Python cannot show the presented certificate chain, so it cannot be checked"
        )
    if len(chain) != 1:
        raise TlsPolicyError(
            f"the worker presented {len(chain)} certificates; exactly one leaf is allowed",
            reason=LocalReason.TLS_CHAIN,
        )
    live_pin = sha256_hex(leaf)
    if not hmac.compare_digest(live_pin, expected_pin) or sha256_hex(chain[0]) != live_pin:
        raise PinMismatchError(
            "the live certificate does not hash to the provisioned pin "
            f"(expected {expected_pin}, found {live_pin})",
            metadata={"expected": expected_pin, "actual": live_pin},
        )
    if tls.selected_alpn_protocol() != "h2":
        # gRPC is HTTP/2 only: a listener that did not agree to h2 is refused before the
        # first request, so before the bearer (C4).
        raise TlsPolicyError("the worker did not agree to HTTP/2 through ALPN (h2)")
    return live_pin


def _classify(exc: BaseException, *, connected: bool, drop_is_refusal: bool = True) -> Exception:
    """The typed error for a failed handshake; ``connected``: the TCP connection was up."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return PinMismatchError("the live certificate is not the provisioned leaf")
    if isinstance(exc, ssl.SSLError):
        text = (exc.reason or "").upper() if isinstance(exc.reason, str) else ""
        if "VERSION" in text or "PROTOCOL" in text:
            return TlsPolicyError(
                "the worker did not complete a TLS 1.3 handshake", reason=LocalReason.TLS_VERSION
            )
        return TlsPolicyError(f"the TLS handshake failed ({exc.reason or 'unknown reason'})")
    if isinstance(exc, TimeoutError | socket.timeout):
        return TransportError("the TLS pre-flight handshake timed out")
    if connected and drop_is_refusal and isinstance(exc, ConnectionError):
        # A server that cannot speak TLS 1.3 ends the connection on the TLS 1.3-only hello,
        # with a FIN (seen as an unexpected EOF above) or a reset, depending on timing; the
        # verdict must not depend on which, so both are a refused handshake.
        return TlsPolicyError(f"the worker dropped the TLS 1.3 handshake ({type(exc).__name__})")
    return TransportError(
        f"cannot reach the worker: {type(exc).__name__}",
        code=grpc.StatusCode.UNAVAILABLE,
        reason=LocalReason.UNREACHABLE,
    )


# How often a handshake waiting for the worker asks whether it exited.
_GONE_POLL_SECONDS = 0.1


class _WorkerGoneError(Exception):
    """The worker exited during the handshake (raised inside open_verified only)."""


def _handshake(tls: ssl.SSLSocket, timeout: float, gone: Callable[[], bool] | None) -> None:
    """The TLS handshake within ``timeout``, ended early once ``gone()`` is true."""
    if gone is None:
        tls.do_handshake()
        return
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        tls.settimeout(max(0.001, min(_GONE_POLL_SECONDS, left)))
        try:
            tls.do_handshake()
            break
        except TimeoutError:
            if gone():
                raise _WorkerGoneError from None
            if time.monotonic() >= deadline:
                raise
    tls.settimeout(timeout)


def open_verified(
    endpoint: Endpoint,
    expected_pin: str,
    anchor: LeafCertificate,
    timeout: float,
    *,
    drop_is_refusal: bool = True,
    gone: Callable[[], bool] | None = None,
) -> ssl.SSLSocket:
    """Opens a TLS connection that passed every check, or raises the typed refusal.

    ``drop_is_refusal=False`` (every connection of the relay, the first one of ``connect``
    included): a connection dropped during the handshake may be a worker going away (a
    restart resets connections too), so it is probed with a TLS 1.2 hello: a listener that
    answers it is refused with ``TlsPolicyError``; otherwise the drop is a retryable
    ``TransportError``. An explicit TLS alert or a wrong certificate is a refusal either way.

    ``gone()`` (a sidecar's) says the worker exited: the handshake then ends at once as
    ``UNREACHABLE``, even when a child kept the listening socket and nobody will answer.
    """
    context = _tls13_context(anchor)
    try:
        raw = socket.create_connection((endpoint.host, endpoint.port), timeout=timeout)
    except OSError as exc:
        raise _classify(exc, connected=False) from None
    # The relay forwards grpcio's small frames (window updates, a GetRun's request) as
    # they come; Nagle's algorithm would hold one behind an unacknowledged segment until
    # the worker's delayed ACK (up to 40 ms on Linux). grpcio sets the same on its sockets.
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    tls: ssl.SSLSocket | None = None
    try:
        tls = context.wrap_socket(raw, server_hostname=endpoint.host, do_handshake_on_connect=False)
        _handshake(tls, timeout, gone)
        _check_session(tls, expected_pin)
    except BaseException as exc:
        (tls or raw).close()
        raw.close()
        if isinstance(exc, PinMismatchError | TlsPolicyError):
            raise
        if isinstance(exc, _WorkerGoneError):
            raise TransportError(
                "the sidecar worker exited during the TLS handshake",
                code=grpc.StatusCode.UNAVAILABLE,
                reason=LocalReason.UNREACHABLE,
            ) from None
        # A FIN before any TLS byte surfaces as SSLEOFError, a reset as ConnectionError:
        # both are a silent drop, which only the probe can tell from a policy refusal.
        if not drop_is_refusal and isinstance(exc, ConnectionError | ssl.SSLEOFError):
            if answers_tls12(endpoint, timeout):
                raise TlsPolicyError(
                    "the worker answers TLS 1.2 but not TLS 1.3", reason=LocalReason.TLS_VERSION
                ) from None
            raise HandshakeDroppedError(
                f"the worker closed the TLS handshake without a word ({type(exc).__name__})"
            ) from None
        if isinstance(exc, OSError | ssl.SSLError):
            raise _classify(exc, connected=True, drop_is_refusal=drop_is_refusal) from None
        raise
    return tls


def preflight(
    endpoint: Endpoint, expected_pin: str, anchor: LeafCertificate, timeout: float
) -> str:
    """Runs the check synchronously and closes the connection. Returns the live pin."""
    with open_verified(endpoint, expected_pin, anchor, timeout) as tls:
        return sha256_hex(tls.getpeercert(binary_form=True) or b"")


async def preflight_async(
    endpoint: Endpoint, expected_pin: str, anchor: LeafCertificate, timeout: float
) -> str:
    """The same check for the asyncio client, run on a worker thread.

    asyncio's TLS layer reports a server that refuses TLS 1.3 as a reset connection rather
    than as the protocol alert the blocking ``ssl`` socket sees, so running the very same
    blocking check keeps one verdict per server whichever client connects. The handshake
    is bounded by ``timeout``.
    """
    return await asyncio.to_thread(preflight, endpoint, expected_pin, anchor, timeout)
