"""The public surface: explicit exports, no generated types in any signature, immutability."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import colossus_agent_client as colossus


def _annotations(obj: object) -> list[str]:
    found: list[str] = []
    members = [obj] if not inspect.isclass(obj) else [obj, *vars(obj).values()]
    for member in members:
        target = member.fget if isinstance(member, property) else member
        ann = getattr(target, "__annotations__", None)
        if isinstance(ann, dict):
            found.extend(str(v) for v in ann.values())
    return found


def test_no_generated_types_in_public_signatures() -> None:
    for name in colossus.__all__:
        obj = getattr(colossus, name)
        for annotation in _annotations(obj):
            assert "pb2" not in annotation, f"{name} exposes {annotation}"


def test_models_are_frozen() -> None:
    run = colossus.TextPart("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.text = "y"  # type: ignore[misc]
    for name in colossus.__all__:
        obj = getattr(colossus, name)
        if dataclasses.is_dataclass(obj) and inspect.isclass(obj):
            assert obj.__dataclass_params__.frozen, name  # type: ignore[attr-defined]


def test_generated_bindings_stay_importable() -> None:
    from colossus_agent_client.api.v1alpha1 import run_service_pb2, run_service_pb2_grpc

    assert run_service_pb2.CreateRunRequest.DESCRIPTOR.full_name.startswith("colossus.api.v1alpha1")
    assert hasattr(run_service_pb2_grpc, "RunServiceStub")


def test_sync_and_async_clients_have_the_same_shape() -> None:
    for sync, async_ in [
        (colossus.Runs, colossus.AsyncRuns),
        (colossus.Artifacts, colossus.AsyncArtifacts),
        (colossus.Client, colossus.AsyncClient),
    ]:
        public = {n for n in vars(sync) if not n.startswith("_")}
        assert public == {n for n in vars(async_) if not n.startswith("_")}
        for n in public:
            a, b = getattr(sync, n), getattr(async_, n)
            if callable(a) and not isinstance(a, type):
                assert list(inspect.signature(a).parameters) == list(
                    inspect.signature(b).parameters
                ), n


def test_the_installed_distribution_holds_one_top_level_package() -> None:
    # A stale setuptools build/ folder once slipped the pre-rename `colossus` package into
    # wheels built in place; this catches any such extra module in what is installed.
    from importlib import metadata

    try:
        files = metadata.files("colossus-agent-client") or []
    except metadata.PackageNotFoundError:
        pytest.skip("colossus-agent-client is not installed (nox and tox install it)")
    top_level = {f.parts[0] for f in files if not f.parts[0].endswith((".dist-info", ".pth"))}
    assert top_level == {"colossus_agent_client"}
    installed = {f.as_posix() for f in files}
    assert "colossus_agent_client/py.typed" in installed
    assert "colossus_agent_client/api/v1alpha1/runs_pb2.pyi" in installed
