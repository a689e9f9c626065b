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


def test_a_refusal_carries_the_wait_until_both_buckets_hold_a_token(clock: ManualClock) -> None:
    rate = limits.CreateRateLimiter(rate=4.0, burst=6, app_rate=1.0, app_burst=4)
    for _ in range(4):
        _admit(rate, "app1")
    with pytest.raises(ApiError) as caught:
        rate.check("app1")
    assert caught.value.retry_delay == pytest.approx(1.0)  # one token at 1 a second
    clock.advance(0.75)
    with pytest.raises(ApiError) as caught:
        rate.check("app1")
    assert caught.value.retry_delay == pytest.approx(0.25)


def test_an_empty_global_bucket_sets_the_delay_by_its_own_refill(clock: ManualClock) -> None:
    rate = limits.CreateRateLimiter(rate=4.0, burst=2, app_rate=1.0, app_burst=4)
    _admit(rate, "app1")
    _admit(rate, "app1")
    with pytest.raises(ApiError) as caught:
        rate.check("app2")
    assert caught.value.metadata["limit"] == "create_rate"
    assert caught.value.retry_delay == pytest.approx(0.25)  # one token at 4 a second


def test_the_retry_delay_is_encoded_as_retry_info_rounded_up_to_milliseconds() -> None:
    from google.rpc import error_details_pb2, status_pb2

    from colossus_reference_worker.errors import encode_status

    blob = encode_status(8, "slow down", "CREATE_RATE_LIMIT", {"limit": "create_rate"}, 1.2345)
    status = status_pb2.Status.FromString(blob)
    assert [d.type_url.rsplit(".", 1)[-1] for d in status.details] == ["ErrorInfo", "RetryInfo"]
    retry = error_details_pb2.RetryInfo()
    assert status.details[1].Unpack(retry)
    assert (retry.retry_delay.seconds, retry.retry_delay.nanos) == (1, 235_000_000)
    # Without a delay, the ErrorInfo stays the only detail.
    assert len(status_pb2.Status.FromString(encode_status(8, "", "WATCH_LIMIT", {})).details) == 1
