"""Differential fuzzing of the four SDKs' trust parsers (see README.md)."""
