"""Differential fuzzing of the three SDKs' trust parsers (see README.md)."""
