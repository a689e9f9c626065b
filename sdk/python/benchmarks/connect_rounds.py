"""Connect time of ``Client.connect`` and ``AsyncClient.connect`` against a raw channel.

The raw side is what any grpcio program does at the least: read the endpoint and the
certificate, open a secure channel trusting that certificate, and make one
``GetServerInfo`` call (waiting for the channel to be ready). The SDK side runs its whole
connect: discovery checks, the trust relay's checked TLS 1.3 connection, the channel
through the relay and the verified ``GetServerInfo``. Each side is timed until it holds a
usable connection; closing it happens outside the timed part on both sides.

The four measurements (sync SDK, sync raw, async SDK, async raw) run in one round each,
in an order that flips every round, so drift on a shared machine reaches every side; each
ratio is taken within a round, and the report gives the median and the min-max spread of
those per-round ratios (never a best-of).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

import colossus_agent_client as colossus
from colossus_agent_client.api.v1alpha1 import system_pb2, system_pb2_grpc

RAW_OPTIONS: Sequence[tuple[str, object]] = (("grpc.use_local_subchannel_pool", 1),)
Metadata = tuple[tuple[str, str], ...]


def _raw_target(directory: Path) -> tuple[str, grpc.ChannelCredentials]:
    descriptor = json.loads((directory / "endpoint.json").read_text())
    target = descriptor["endpoint"].removeprefix("https://")
    creds = grpc.ssl_channel_credentials(
        root_certificates=(directory / "certificate.pem").read_bytes()
    )
    return target, creds


def _sync_sdk(options: colossus.DaemonOptions) -> float:
    started = time.perf_counter()
    client = colossus.Client.connect(options)
    took = time.perf_counter() - started
    client.close()
    return took


def _sync_raw(directory: Path, auth: Metadata) -> float:
    started = time.perf_counter()
    target, creds = _raw_target(directory)
    channel = grpc.secure_channel(target, creds, options=RAW_OPTIONS)
    system_pb2_grpc.SystemServiceStub(channel).GetServerInfo(
        system_pb2.GetServerInfoRequest(), metadata=auth, wait_for_ready=True, timeout=10
    )
    took = time.perf_counter() - started
    channel.close()
    return took


async def _async_sdk(options: colossus.DaemonOptions) -> float:
    started = time.perf_counter()
    client = await colossus.AsyncClient.connect(options)
    took = time.perf_counter() - started
    await client.close()
    return took


async def _async_raw(directory: Path, auth: Metadata) -> float:
    started = time.perf_counter()
    target, creds = _raw_target(directory)
    channel = grpc.aio.secure_channel(target, creds, options=RAW_OPTIONS)
    await system_pb2_grpc.SystemServiceStub(channel).GetServerInfo(
        system_pb2.GetServerInfoRequest(), metadata=auth, wait_for_ready=True, timeout=10
    )
    took = time.perf_counter() - started
    await channel.close(None)
    return took


def _spread(prefix: str, sdk: list[float], raw: list[float]) -> dict[str, Any]:
    ratios = [a / b for a, b in zip(sdk, raw, strict=True)]
    return {
        f"{prefix}_ratio": round(statistics.median(ratios), 2),
        f"{prefix}_ratio_min": round(min(ratios), 2),
        f"{prefix}_ratio_max": round(max(ratios), 2),
        f"{prefix}_sdk_median_ms": round(statistics.median(sdk) * 1e3, 1),
        f"{prefix}_raw_median_ms": round(statistics.median(raw) * 1e3, 1),
    }


def connect_rounds(
    directory: Path, options: colossus.DaemonOptions, auth: Metadata, rounds: int
) -> dict[str, Any]:
    """Runs ``rounds`` alternating rounds; returns the ``connect_*`` and
    ``async_connect_*`` figures (median and min-max of the per-round ratios)."""
    loop = asyncio.new_event_loop()
    try:
        sides: dict[str, Callable[[], float]] = {
            "sync_sdk": lambda: _sync_sdk(options),
            "sync_raw": lambda: _sync_raw(directory, auth),
            "async_sdk": lambda: loop.run_until_complete(_async_sdk(options)),
            "async_raw": lambda: loop.run_until_complete(_async_raw(directory, auth)),
        }
        for measure in sides.values():
            measure()  # warm-up: lazy imports, cached contexts, the worker's first accept
        times: dict[str, list[float]] = {name: [] for name in sides}
        for i in range(rounds):
            for name in list(sides) if i % 2 == 0 else list(reversed(sides)):
                times[name].append(sides[name]())
    finally:
        loop.close()
    return {
        **_spread("connect", times["sync_sdk"], times["sync_raw"]),
        **_spread("async_connect", times["async_sdk"], times["async_raw"]),
    }
