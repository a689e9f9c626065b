"""The Python client maps every SDK error class to a specific protocol kind."""

import importlib.util
import inspect

import pytest

from .conftest import SUITE

colossus = pytest.importorskip("colossus_agent_client")

# Classes that legitimately have no more specific kind than "other".
GENERIC = {"ColossusError", "ApiError", "SidecarError", "ClientClosedError"}


def load_client():
    spec = importlib.util.spec_from_file_location("python_client", SUITE / "clients/python/errors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_error_class_has_a_kind():
    client = load_client()
    classes = [
        obj
        for name, obj in vars(colossus).items()
        if inspect.isclass(obj) and issubclass(obj, colossus.ColossusError) and name not in GENERIC
    ]
    assert classes
    for cls in classes:
        view = client.error_view(cls("boom"))
        assert view["kind"] != "other", f"{cls.__name__} maps to 'other'"


def test_specific_classes_win_over_their_parents():
    client = load_client()
    assert client.error_view(colossus.WatchGapError("x"))["kind"] == "watch_gap"
    assert client.error_view(colossus.CapabilityMissingError("x"))["kind"] == "capability_missing"
    assert client.error_view(colossus.IncompatibleServerError("x"))["kind"] == "compatibility"
    assert client.error_view(colossus.PinMismatchError("x"))["kind"] == "trust"
