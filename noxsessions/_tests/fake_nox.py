"""Stands in for nox in the lane tests: prints its arguments; session "bad" fails."""

import sys

args = sys.argv[1:]
name = args[args.index("-s") + 1]
print(f"fake nox ran {name} with {' '.join(args)}")
sys.exit(3 if name == "bad" else 0)
