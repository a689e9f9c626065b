"""Prints how long ``import colossus_agent_client`` takes in fresh interpreters (median
and spread).

Each round starts a new Python process, so nothing is cached in ``sys.modules``; the
interpreter's own start-up is not counted (the clock starts just before the import).
With ``--compare SRC`` the rounds alternate between the installed/current package and
the one under ``SRC`` (for example an older checkout's ``sdk/python/src``), and the ratio of
the medians is printed too.

    python benchmarks/import_time.py [--rounds 10] [--compare /tmp/old/sdk/python/src]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

_PROBE = (
    "import time; t = time.perf_counter(); import colossus_agent_client; "
    "print(time.perf_counter() - t); "
    "import sys; print(int('keyring' in sys.modules), int('cryptography' in sys.modules))"
)


def _once(src: str | None) -> tuple[float, str]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], check=True, capture_output=True, text=True, env=env
    ).stdout.split("\n")
    return float(out[0]), out[1]


def _summary(label: str, seconds: list[float], loaded: str) -> str:
    keyring, cryptography = (bool(int(flag)) for flag in loaded.split())
    return (
        f"{label}: median {statistics.median(seconds) * 1000:.0f} ms "
        f"(min {min(seconds) * 1000:.0f}, max {max(seconds) * 1000:.0f}, "
        f"{len(seconds)} fresh processes); keyring loaded: {keyring}, "
        f"cryptography loaded: {cryptography}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--compare", help="another SDK source folder to alternate with")
    args = parser.parse_args()
    current: list[float] = []
    other: list[float] = []
    loaded_current = loaded_other = ""
    for _ in range(args.rounds):
        seconds, loaded_current = _once(None)
        current.append(seconds)
        if args.compare:
            seconds, loaded_other = _once(args.compare)
            other.append(seconds)
    print(_summary("import colossus_agent_client", current, loaded_current))
    if args.compare:
        print(_summary(f"import colossus_agent_client from {args.compare}", other, loaded_other))
        ratio = statistics.median(current) / statistics.median(other)
        print(f"ratio current/compared: {ratio:.2f}")


if __name__ == "__main__":
    main()
