"""Tests of bench_ci's bookkeeping (noxsessions/ci.py), without running any session."""

from __future__ import annotations

import json
import time
from pathlib import Path

from noxsessions import ci
from noxsessions._lane_facts import read_weights, write_weights


def test_timing_splits_set_up_from_the_rest_and_load_is_described() -> None:
    timing = ci.Timing(wall=100.0, setup=30.0, busy=150.0, failed=[], load=[1.0, 3.0, 2.0])
    assert timing.rest == 120.0
    assert ci.describe_load(timing.load) == "load median 2.0 (min 1.0, max 3.0)"
    assert ci.describe_load([]) == "load not sampled"


def test_load_sampler_samples_until_it_is_left(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(ci, "LOAD_EVERY", 0.01)
    with ci.LoadSampler() as sampler:
        time.sleep(0.1)
    count = len(sampler.samples)
    assert count >= 2
    time.sleep(0.05)
    assert len(sampler.samples) == count  # stopped on exit


def test_split_log_counts_set_up_lines_and_skips_session_ends() -> None:
    text = "\n".join(
        [
            "nox > [2026-12-01 00:00:00,000] Running session a",
            "nox > [2026-12-01 00:00:10,000] pytest -q",
            "nox > [2026-12-01 00:00:40,000] Session a was successful in 40 seconds.",
            "nox > [2026-12-01 00:00:41,000] Running session b",
            "nox > [2026-12-01 00:00:45,000] uv pip install x",
            "nox > [2026-12-01 00:00:50,000] Session b was successful in 9 seconds.",
        ]
    )
    assert ci.split_log(text) == (10.0 + 4.0 + 5.0, 10.0 + 30.0 + 4.0 + 5.0)


def test_parse_summary_reads_the_lanes_table() -> None:
    text = "\n".join(
        [
            "nox > Session x was successful in 3 seconds.",
            "session           result  seconds  cpu-s",
            "check_generated   ok          4.6      3",
            "conformance       FAILED    441.7    612",
            "2 sessions in 450.0 s wall on 3 lanes",
        ]
    )
    assert ci.parse_summary(text) == [
        ci.SessionTime("check_generated", True, 4.6, 3.0),
        ci.SessionTime("conformance", False, 441.7, 612.0),
    ]


def test_measured_weights_replace_their_sessions_and_keep_the_others(tmp_path: Path) -> None:
    weights = tmp_path / "lane-weights.json"
    write_weights({"conformance": 289, "go_lint": 13}, "by hand", weights)
    write_weights({"go_lint": 15.6, "new_session": 2.2}, "bench_ci", weights)
    assert read_weights(weights) == {"conformance": 289.0, "go_lint": 16.0, "new_session": 2.0}
    assert json.loads(weights.read_text())["how"] == "bench_ci"
