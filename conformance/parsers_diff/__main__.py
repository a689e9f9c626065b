"""Runs one seeded batch through the four SDKs' verdict programs and compares the verdicts.

    python -m parsers_diff --go GO_TEST_BINARY --rust RUST_TEST_BINARY --node-script JS
                           [--count N] [--seed S]

Exit status 1 when any input gets different verdicts (accept against a refusal, or two
refusals of different kinds), or when a parser lets an untyped error escape.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .generate import Case, generate

SDKS = ("python", "typescript", "go", "rust")
KNOWN = {"accept", "trust", "credential", "sidecar"}


def _run(argv: list[str], lines: list[str], timeout: float) -> list[dict[str, str]]:
    """The program's verdicts, in order. An input that kills the program (a native crash
    of the runtime, say) is that input's verdict, ``crash``, and the rest is sent again."""
    answers: list[dict[str, str]] = []
    while len(answers) < len(lines):
        batch = "".join(lines[len(answers) :])
        done = subprocess.run(
            argv, input=batch.encode("utf-8"), capture_output=True, timeout=timeout, check=False
        )
        # The Go test binary adds its own PASS line; verdicts are the lines that are objects.
        out = [line for line in done.stdout.decode("utf-8").splitlines() if line.startswith("{")]
        answers += [json.loads(line) for line in out]
        if done.returncode == 0:
            break
        if len(answers) >= len(lines):
            sys.stderr.write(done.stderr.decode("utf-8", "replace")[-4000:])
            raise SystemExit(f"{argv[0]} exited with {done.returncode} after answering every input")
        answers.append({"verdict": "crash", "error": f"exit status {done.returncode}"})
    return answers


def _signature(answers: dict[str, dict[str, str]]) -> str:
    return ", ".join(f"{sdk} {answers[sdk]['verdict']}" for sdk in SDKS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="parsers_diff", description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=20000, help="inputs in the batch (default 20000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generators (default 1)")
    parser.add_argument("--go", required=True, help="the Go SDK's compiled test binary")
    parser.add_argument("--rust", required=True, help="the Rust SDK's compiled unit-test binary")
    parser.add_argument("--node-script", required=True, help="the compiled TypeScript verdict program")
    parser.add_argument("--show", type=int, default=3, help="inputs shown per disagreement group")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)

    started = time.monotonic()
    cases = generate(args.seed, args.count)
    lines = [case.line() + "\n" for case in cases]
    generated = time.monotonic() - started
    programs = {
        "python": [sys.executable, str(Path(__file__).with_name("verdict_python.py"))],
        "typescript": ["node", args.node_script],
        "go": [args.go, "-test.run", "^TestParsersDiffVerdicts$", "-parsers-diff"],
        # The Rust unit-test binary answers on stdin when COLOSSUS_PARSERS_DIFF is set.
        "rust": [
            "env",
            "COLOSSUS_PARSERS_DIFF=1",
            args.rust,
            "--exact",
            "trust::vectors::parsers_diff_verdicts",
            "--nocapture",
            "--test-threads=1",
            "--quiet",
        ],
    }
    with ThreadPoolExecutor(len(programs)) as pool:
        futures = {sdk: pool.submit(_run, argv_, lines, args.timeout) for sdk, argv_ in programs.items()}
        verdicts = {sdk: future.result() for sdk, future in futures.items()}
    for sdk, answered in verdicts.items():
        if len(answered) != len(cases):
            raise SystemExit(f"{sdk} answered {len(answered)} of {len(cases)} inputs")

    Found = list[tuple[Case, dict[str, dict[str, str]]]]
    groups: dict[str, dict[str, Found]] = defaultdict(lambda: defaultdict(list))
    tally: Counter[str] = Counter()
    for i, case in enumerate(cases):
        answers = {sdk: verdicts[sdk][i] for sdk in SDKS}
        kinds = {a["verdict"] for a in answers.values()}
        tally[f"{case.kind} {'/'.join(sorted(kinds))}"] += 1
        if len(kinds) > 1 or not kinds <= KNOWN:
            groups[case.kind][_signature(answers)].append((case, answers))

    print(
        f"parsers_diff: seed {args.seed}, {len(cases)} inputs, generated in {generated:.1f} s, "
        f"judged by {len(SDKS)} SDKs in {time.monotonic() - started - generated:.1f} s"
    )
    for key, n in sorted(tally.items()):
        print(f"  {key}: {n}")
    if not groups:
        print("no disagreements")
        return 0
    total = sum(len(found) for by_sig in groups.values() for found in by_sig.values())
    print(f"\n{total} inputs with disagreeing verdicts:")
    for kind, by_sig in sorted(groups.items()):
        print(f"\n== {kind} ==")
        for signature, found in sorted(by_sig.items(), key=lambda kv: -len(kv[1])):
            found.sort(key=lambda item: len(item[0].line()))
            print(f"-- {signature}: {len(found)} inputs")
            for case, answers in found[: args.show]:
                errors = ", ".join(f"{sdk} {answers[sdk].get('error', '-')}" for sdk in SDKS)
                print(f"   {case.how}  [{errors}]")
                print(f"     {case.line()}")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
