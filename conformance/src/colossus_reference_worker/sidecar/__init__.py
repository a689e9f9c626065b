"""Sidecar placement (W16): a private worker bootstrapped over inherited pipes.

See ``conformance/docs/sidecar.md``. :mod:`.protocol` holds the framing and
validation, :mod:`.lifetime` the parent-death handling and :mod:`.main` the
start-up sequence behind ``colossus-reference-worker --sidecar``.
"""
