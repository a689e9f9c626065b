"""Test helpers for applications that use the Colossus SDK.

* :class:`FakeWorker`: an in-process, scripted worker on loopback TLS, with injectable
  faults (:class:`Fault`), for fast unit tests of your own code.
* ``colossus_agent_client.testing.pytest_plugin``: pytest fixtures, ``colossus_fake_worker`` and
  ``colossus_reference_worker`` (a client of the real reference worker, started as a
  sidecar). Enable them with ``pytest_plugins = ["colossus_agent_client.testing.pytest_plugin"]`` in
  your ``conftest.py``.

Everything here is for tests only: the fake worker's certificate and bearer are made up
on the spot and it keeps runs in memory.
"""

from ._fake_worker import FakeWorker
from ._faults import Fault
from ._leaf import TestLeaf, make_test_leaf

__all__ = ["FakeWorker", "Fault", "TestLeaf", "make_test_leaf"]

for _cls in (FakeWorker, Fault, TestLeaf):
    # Reprs and tracebacks show the module users import (see the package's __init__).
    _cls.__module__ = __name__
del _cls
