"""Create-rate token buckets (W11): the refill arithmetic on a clock the test moves.

The buckets read ``time.monotonic`` through their module, so each test swaps in a
clock it advances by hand: nothing here depends on how fast the machine is.
"""

from __future__ import annotations

import types

import pytest

from colossus_reference_worker.engine import limits
from colossus_reference_worker.errors import ApiError


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> ManualClock:
    manual = ManualClock()
    monkeypatch.setattr(limits, "time", types.SimpleNamespace(monotonic=manual.monotonic))
    return manual


def _drain(bucket: limits.TokenBucket) -> int:
    """Take tokens while the bucket grants them (the clock standing still)."""
    taken = 0
    while bucket.available():
        bucket.take()
        taken += 1
        assert taken <= 1000, "the bucket never ran dry"
    return taken


def test_a_fresh_bucket_grants_exactly_its_burst(clock: ManualClock) -> None:
    assert _drain(limits.TokenBucket(rate=1.0, burst=4)) == 4
    assert _drain(limits.TokenBucket(rate=4.0, burst=16)) == 16


def test_a_token_returns_after_one_refill_period_not_before(clock: ManualClock) -> None:
    bucket = limits.TokenBucket(rate=4.0, burst=16)
    _drain(bucket)
    clock.advance(0.125)  # half a token at 4 a second
    assert not bucket.available()
    clock.advance(0.125)  # the other half: exactly one token
    assert _drain(bucket) == 1
    clock.advance(1.0)  # four tokens at 4 a second
    assert _drain(bucket) == 4


def test_elapsed_time_is_counted_once(clock: ManualClock) -> None:
    bucket = limits.TokenBucket(rate=1.0, burst=4)
    _drain(bucket)
    clock.advance(0.5)
    # Asking again without time passing must not count the same half second again.
    for _ in range(5):
        assert not bucket.available()
    clock.advance(0.5)
    assert _drain(bucket) == 1


def test_a_long_idle_refills_to_the_burst_and_no_further(clock: ManualClock) -> None:
    bucket = limits.TokenBucket(rate=1.0, burst=4)
    _drain(bucket)
    clock.advance(3600.0)
    assert _drain(bucket) == 4


def _refusal(rate: limits.CreateRateLimiter, app: str) -> str:
    with pytest.raises(ApiError) as caught:
        rate.check(app)
    assert caught.value.reason == "CREATE_RATE_LIMIT"
    return caught.value.metadata["limit"]


def _admit(rate: limits.CreateRateLimiter, app: str) -> None:
    rate.check(app)
    rate.take(app)


def test_each_admission_spends_one_token_of_both_buckets(clock: ManualClock) -> None:
    rate = limits.CreateRateLimiter(rate=4.0, burst=6, app_rate=1.0, app_burst=4)
    for _ in range(4):
        _admit(rate, "app1")
    assert _refusal(rate, "app1") == "create_rate_per_application"
    # Another application has its own bucket, but only two global tokens are left.
    _admit(rate, "app2")
    _admit(rate, "app2")
    assert _refusal(rate, "app2") == "create_rate"
    assert _refusal(rate, "app3") == "create_rate"


def test_a_refused_check_spends_nothing(clock: ManualClock) -> None:
    rate = limits.CreateRateLimiter(rate=100.0, burst=100, app_rate=1.0, app_burst=2)
    _admit(rate, "app1")
    _admit(rate, "app1")
    for _ in range(10):
        assert _refusal(rate, "app1") == "create_rate_per_application"
    clock.advance(1.0)  # one token back: the refusals above must not have borrowed it
    _admit(rate, "app1")
    assert _refusal(rate, "app1") == "create_rate_per_application"
