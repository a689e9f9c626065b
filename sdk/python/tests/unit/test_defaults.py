"""The defaults the four SDKs share (the S1 table in docs/requirements.md).

The TypeScript, Go and Rust SDKs pin the same numbers in their own tests; a change here without
a change there makes the SDKs disagree on how long a watch survives a restart.
"""

from __future__ import annotations

import colossus_agent_client as colossus
from colossus_agent_client._options import DEFAULT_MAX_RESPONSE_BYTES
from colossus_agent_client._watch_core import REPLAY_WINDOW, REPLAY_WINDOW_BYTES


def test_retry_policy_defaults() -> None:
    policy = colossus.RetryPolicy()
    assert policy.max_attempts == 5  # the first call included
    assert policy.max_elapsed == 30.0
    assert (policy.initial_backoff, policy.multiplier, policy.max_backoff) == (0.1, 2.0, 5.0)


def test_replay_window_holds_two_largest_responses() -> None:
    assert REPLAY_WINDOW == 1024
    assert REPLAY_WINDOW_BYTES == 8 * 1024 * 1024 == 2 * DEFAULT_MAX_RESPONSE_BYTES


def test_call_and_sidecar_defaults() -> None:
    options = colossus.SidecarOptions(executable="worker", application_id="app")
    assert (options.timeout, options.connect_timeout) == (30.0, 10.0)
    assert options.retry == colossus.RetryPolicy()
    assert (options.startup_timeout, options.max_restarts, options.shutdown_grace) == (30.0, 3, 5.0)
    backoff = options.restart_backoff
    assert (backoff.initial_backoff, backoff.max_backoff) == (0.5, 5.0)
