"""noxsessions/_rust_readme.py: which Rust README blocks rust_readme accepts, and the crate it
writes from them."""

from __future__ import annotations

from pathlib import Path

from noxsessions import _rust_readme

ROOT = Path(__file__).resolve().parents[2]

MANIFEST = '<!-- readme-test: manifest -->\n```toml\n[dependencies]\ncolossus-sdk = { path = "crates/colossus-sdk" }\n```\n'
PROGRAM = '<!-- readme-test: run -->\n```rust\nfn main() {}\n```\n'


def test_the_sdk_readme_passes() -> None:
    found = _rust_readme.blocks((ROOT / "crates/colossus-sdk/README.md").read_text())
    assert _rust_readme.problems(found) == []
    assert {b.how for b in found} == {"manifest", "run", "daemon", "dev"}


def test_hidden_lines_unmarked_blocks_and_fragments_are_refused() -> None:
    hidden = "<!-- readme-test: run -->\n```rust\n# fn main() {\nlet x = 1;\n# }\n```\n"
    problems = _rust_readme.problems(_rust_readme.blocks(MANIFEST + hidden))
    assert any("rustdoc-hidden" in p and "# fn main() {" in p for p in problems)
    fragment = "<!-- readme-test: run -->\n```rust\nlet x = 1;\n```\n"
    assert any("needs its own fn main" in p for p in _rust_readme.problems(_rust_readme.blocks(MANIFEST + fragment)))
    unmarked = "```rust,no_run\nfn main() {}\n```\n"
    assert any("needs a marker" in p for p in _rust_readme.problems(_rust_readme.blocks(MANIFEST + unmarked)))
    assert any("exactly one manifest" in p for p in _rust_readme.problems(_rust_readme.blocks(PROGRAM)))
    # An attribute is not a hidden line.
    attribute = "<!-- readme-test: run -->\n```rust\n#[tokio::main]\nasync fn main() {}\n```\n"
    assert _rust_readme.problems(_rust_readme.blocks(MANIFEST + attribute)) == []


def test_the_crate_has_the_readme_dependencies_and_one_binary_per_program(tmp_path: Path) -> None:
    daemon = '<!-- readme-test: daemon -->\n```rust\nfn main() { let _ = ("wkr_...", "8cf2...7e3c"); }\n```\n'
    found = _rust_readme.blocks(MANIFEST + PROGRAM + daemon)
    lock = tmp_path / "Cargo.lock"
    lock.write_text("# lock\n")
    programs = _rust_readme.write_crate(
        tmp_path / "app", found, Path("/sdk"), lock, {"instance_id": "wkr_x", "certificate_sha256": "ab" * 32}
    )
    manifest = (tmp_path / "app/Cargo.toml").read_text()
    assert 'colossus-sdk = { path = "/sdk" }' in manifest
    assert 'warnings = "deny"' in manifest and "[workspace]" in manifest
    assert [p.how for p in programs] == ["run", "daemon"]
    code = (tmp_path / "app/src/bin" / f"{programs[1].name}.rs").read_text()
    assert '"wkr_x"' in code and '"' + "ab" * 32 + '"' in code
    assert (tmp_path / "app/Cargo.lock").read_text() == "# lock\n"
