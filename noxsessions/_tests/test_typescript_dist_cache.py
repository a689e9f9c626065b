"""sdk/typescript/scripts/build.mjs: dist/ once per content of its inputs, kept outside the
clone. Runs the real script in a small copy of the package whose `tsup` is a stand-in that
counts its runs (no npm install needed)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

BUILD = Path(__file__).resolve().parents[2] / "sdk/typescript/scripts/build.mjs"
FAKE_TSUP = """#!/bin/sh
echo run >> runs.log
mkdir -p dist
cat src/*.ts > dist/index.js
echo "dts ${TSUP_SKIP_DTS:-yes}" > dist/index.d.ts
"""

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")


@pytest.fixture
def package(tmp_path: Path) -> Path:
    root = tmp_path / "typescript"
    for name in ("package.json", "package-lock.json", "tsup.config.ts", "tsconfig.json"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}\n")
    (root / "src").mkdir()
    (root / "src/index.ts").write_text("export const a = 1;\n")
    (root / "scripts").mkdir()
    shutil.copy2(BUILD, root / "scripts/build.mjs")
    tsup = root / "node_modules/.bin/tsup"
    tsup.parent.mkdir(parents=True)
    tsup.write_text(FAKE_TSUP)
    tsup.chmod(0o755)
    return root


def build(root: Path, cache: Path | None, **extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLOSSUS_TYPESCRIPT_DIST_CACHE", "TSUP_SKIP_DTS")}
    if cache is not None:
        env["COLOSSUS_TYPESCRIPT_DIST_CACHE"] = str(cache)
    done = subprocess.run(["node", "scripts/build.mjs"], cwd=root, env={**env, **extra},
                          capture_output=True, text=True, check=True)
    return done.stderr


def runs(root: Path) -> int:
    log = root / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_fresh_copy_of_the_same_sources_takes_dist_from_the_cache(package: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    build(package, cache)
    assert runs(package) == 1
    (kept,) = [p for p in cache.iterdir()]
    built = (package / "dist/index.js").read_text()

    shutil.rmtree(package / "dist")  # a fresh clone has no dist/
    said = build(package, cache)
    assert runs(package) == 1 and "copied from" in said
    assert (package / "dist/index.js").read_text() == built
    assert (package / "dist/.colossus-build-sha256").read_text() == kept.name

    assert "was built from these sources" in build(package, cache)
    assert runs(package) == 1


def test_changed_sources_build_again_and_the_cache_keeps_both(package: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    build(package, cache)
    (package / "src/index.ts").write_text("export const a = 2;\n")
    build(package, cache)
    assert runs(package) == 2
    assert "a = 2" in (package / "dist/index.js").read_text()
    assert len(list(cache.iterdir())) == 2


def test_an_incomplete_cache_entry_is_never_used(package: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    build(package, cache)
    (kept,) = list(cache.iterdir())
    (kept / ".colossus-build-sha256").unlink()  # as if the copy had been interrupted
    shutil.rmtree(package / "dist")
    build(package, cache)
    assert runs(package) == 2


def test_bundles_without_declarations_and_builds_without_a_cache_keep_nothing(package: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    build(package, cache, TSUP_SKIP_DTS="1")
    assert runs(package) == 1 and not cache.exists()
    build(package, None)
    assert runs(package) == 2 and not cache.exists()
