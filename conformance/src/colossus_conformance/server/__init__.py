"""Server conformance: the suite judges a worker through its public API (docs/worker-protocol.md).

``manifest`` reads the worker manifest, ``daemon`` drives the worker through it, ``wire``
and ``tls_probe`` are the runner's reference client, ``catalogue`` and ``cases/`` the
server cases, ``suite`` runs them and ``mutation`` plants worker bugs to prove they can fail.
"""
