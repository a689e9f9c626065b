"""Prints how long ``import colossus`` takes in fresh interpreters (median and spread).

Each round starts a new Python process, so nothing is cached in ``sys.modules``; the
interpreter's own start-up is not counted (the clock starts just before the import).

    python benchmarks/import_time.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

_PROBE = (
    "import time; t = time.perf_counter(); import colossus; "
    "print(time.perf_counter() - t); "
    "import sys; print(int('keyring' in sys.modules), int('cryptography' in sys.modules))"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    seconds: list[float] = []
    loaded = ""
    for _ in range(args.rounds):
        out = subprocess.run(
            [sys.executable, "-c", _PROBE], check=True, capture_output=True, text=True
        ).stdout.split("\n")
        seconds.append(float(out[0]))
        loaded = out[1]
    keyring, cryptography = (bool(int(flag)) for flag in loaded.split())
    print(
        f"import colossus: median {statistics.median(seconds) * 1000:.0f} ms "
        f"(min {min(seconds) * 1000:.0f}, max {max(seconds) * 1000:.0f}, "
        f"{args.rounds} fresh processes); keyring loaded: {keyring}, "
        f"cryptography loaded: {cryptography}"
    )


if __name__ == "__main__":
    main()
