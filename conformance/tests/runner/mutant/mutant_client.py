"""The Python conformance client with one SDK behaviour deliberately broken.

Used only by ``test_sensitivity.py`` to prove that the catalogue notices real
defects: the mutation named by ``COLOSSUS_CONFORMANCE_MUTANT`` is patched into
the SDK's private watch core before the ordinary client runs.
"""

import os
import runpy
import sys
from pathlib import Path

from colossus_agent_client import _watch_core
from colossus_agent_client._watch_core import CloseAction, Verdict

MUTANT = os.environ["COLOSSUS_CONFORMANCE_MUTANT"]


def deliver_everything(self, run_id, sequence, content, *, terminal):
    # No dedup and no gap check: every event is passed to the caller.
    self.last_sequence = max(self.last_sequence, sequence)
    if terminal:
        self._terminal_sequence = sequence
    return Verdict.DELIVER


def trust_clean_close(self, run):
    # Treats any clean close as completion, without comparing cursors.
    return CloseAction.COMPLETE


def leaky_load_bearer(provider):
    # Logs the secret it loaded, as a careless connect path might.
    bearer = original_load_bearer(provider)
    print(f"loaded bearer {bearer.reveal()}", file=sys.stderr)
    return bearer


if MUTANT == "no-dedup-no-gap":
    _watch_core.WatchCore.on_event = deliver_everything
elif MUTANT == "clean-close-is-completion":
    _watch_core.WatchCore.on_clean_close = trust_clean_close
elif MUTANT == "no-tls-preflight":
    # The SDK's own handshake (pre-flight and trust relay) lets TLS 1.2 through: the
    # context allows it and the session check no longer looks at the version.
    import ssl

    from colossus_agent_client._transport import _preflight

    strict_context = _preflight._tls13_context.__wrapped__
    strict_check = _preflight._check_session

    def lenient_context(anchor):
        context = strict_context(anchor)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return context

    class ReportsTls13:
        def __init__(self, tls):
            self._tls = tls

        def version(self):
            return "TLSv1.3"

        def __getattr__(self, name):
            return getattr(self._tls, name)

    _preflight._tls13_context = lenient_context
    _preflight._check_session = lambda tls, pin: strict_check(ReportsTls13(tls), pin)
elif MUTANT == "no-server-info-check":
    from colossus_agent_client import _connection

    _connection.verify_server_info = lambda info, target: None
elif MUTANT == "retry-mutations":
    # Repeats a mutation once after UNAVAILABLE, which the contract forbids.
    import grpc
    from colossus_agent_client import _connection

    original_call = _connection.call_mutation_sync

    def retrying_call(method, request, session, timeout, *, idempotency_key=None):
        try:
            return method(request, timeout=timeout, metadata=session.metadata())
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                raise _connection.from_rpc_error(
                    exc, mutation=True, idempotency_key=idempotency_key
                ) from None
        return original_call(method, request, session, timeout, idempotency_key=idempotency_key)

    _connection.call_mutation_sync = retrying_call
    from colossus_agent_client import _runs

    _runs.call_mutation_sync = retrying_call
elif MUTANT == "bearer-in-log":
    from colossus_agent_client import _connection

    original_load_bearer = _connection.load_bearer
    _connection.load_bearer = leaky_load_bearer
else:
    raise SystemExit(f"unknown mutant {MUTANT}")

client = Path(__file__).resolve().parents[3] / "clients" / "python" / "client.py"
sys.argv[0] = str(client)
sys.path.insert(0, str(client.parent))  # the client's own modules (steps, views, ...)
runpy.run_path(str(client), run_name="__main__")
