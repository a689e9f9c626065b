"""The Python plugin's module_prefix option moves modules without touching wire names."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import sys
from types import ModuleType

import pytest
from conftest import GENERATED_DIRS, ROOT

PLUGIN = ROOT / "sdk/scripts/codegen/protoc-gen-colossus-python"


def load_plugin() -> ModuleType:
    # Only the text rewriting is tested here, so grpcio-tools (installed in the pinned
    # codegen environment, not in this one) is stood in for when it is absent.
    if "grpc_tools" not in sys.modules:
        try:
            import grpc_tools  # noqa: F401
        except ModuleNotFoundError:
            stand_in = ModuleType("grpc_tools")
            stand_in.protoc = ModuleType("grpc_tools.protoc")  # type: ignore[attr-defined]
            sys.modules["grpc_tools"] = stand_in
    loader = importlib.machinery.SourceFileLoader("protoc_gen_colossus_python", str(PLUGIN))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


GENERATED = """\
from colossus.api.v1alpha1 import runs_pb2 as colossus_dot_api_dot_v1alpha1_dot_runs__pb2
import colossus.api.v1alpha1.system_pb2
from colossus.apis import elsewhere_pb2
_builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, 'colossus.api.v1alpha1.runs_pb2', _globals)
        '/colossus.api.v1alpha1.RunService/GetRun',
server.add_registered_method_handlers('colossus.api.v1alpha1.RunService', handlers)
"""


def test_rewrites_module_paths_and_leaves_wire_names() -> None:
    plugin = load_plugin()
    rewriter = plugin.module_rewriter("colossus.api:pkg.api")

    out = plugin.rewrite_modules(GENERATED, rewriter).splitlines()

    assert out[0].startswith("from pkg.api.v1alpha1 import runs_pb2 as colossus_dot_api")
    assert out[1] == "import pkg.api.v1alpha1.system_pb2"
    assert out[2] == "from colossus.apis import elsewhere_pb2"  # a longer name is another module
    assert "(DESCRIPTOR, 'pkg.api.v1alpha1.runs_pb2', _globals)" in out[3]
    assert out[4:] == GENERATED.splitlines()[4:]


@pytest.mark.parametrize("option", ["colossus.api", "colossus.api:", ":pkg.api"])
def test_refuses_a_malformed_option(option: str) -> None:
    with pytest.raises(ValueError, match="module_prefix must be"):
        load_plugin().module_rewriter(option)


def test_committed_bindings_import_only_from_the_sdk_package() -> None:
    folder = ROOT / GENERATED_DIRS["python"]
    sources = sorted(folder.rglob("*.py")) + sorted(folder.rglob("*.pyi"))
    assert sources
    for path in sources:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import) colossus\.", text, re.MULTILINE), path
    services = (folder / "v1alpha1/run_service_pb2_grpc.py").read_text(encoding="utf-8")
    assert "'/colossus.api.v1alpha1.RunService/GetRun'" in services
