"""Conformance runner for the Colossus SDKs.

The runner starts the reference worker, drives one small client per SDK
through the language-neutral client protocol (``docs/client-protocol.md``)
and judges what the clients and the worker observed.
"""
