"""The committed generated code must match what scripts/gen_proto.py makes from proto/."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load_generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_proto", ROOT / "scripts" / "gen_proto.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_code_is_up_to_date(tmp_path: Path) -> None:
    gen = _load_generator()
    written = gen.generate(tmp_path)
    assert written, "no .proto files found under proto/"
    stale = []
    for fresh in written:
        rel = fresh.relative_to(tmp_path)
        committed = ROOT / "client_sdk" / rel
        if not committed.exists() or committed.read_bytes() != fresh.read_bytes():
            stale.append(str(rel))
    assert not stale, f"generated code is stale, run scripts/gen_proto.py: {stale}"


def test_every_proto_element_is_commented() -> None:
    """Every message, field, enum value and RPC carries a comment line above it."""
    missing = []
    for proto in (ROOT / "proto").rglob("*.proto"):
        lines = proto.read_text().splitlines()
        for i, line in enumerate(lines):
            s = line.strip()
            if not s or s.startswith("//") or s in ("}", "};"):
                continue
            if s.startswith(("syntax", "package", "option", "import", "oneof")):
                continue
            prev = lines[i - 1].strip() if i else ""
            if not prev.startswith("//"):
                missing.append(f"{proto.name}:{i + 1}: {s}")
    assert not missing, "uncommented proto elements:\n" + "\n".join(missing)
