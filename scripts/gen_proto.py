#!/usr/bin/env python3
"""Generate the Python gRPC/protobuf code from proto/ into client_sdk/cfarena/v1/.

The generated files are committed and never edited by hand; tests/test_proto_fresh.py
fails when they are out of date. Run: `python scripts/gen_proto.py` (needs the
`dev` extra: grpcio-tools).

`--out DIR` writes somewhere else (the freshness test uses it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
DEFAULT_OUT = ROOT / "client_sdk"


def proto_files() -> list[Path]:
    return sorted(PROTO_ROOT.rglob("*.proto"))


def generate(out: Path) -> list[Path]:
    """Run protoc on every .proto under proto/; return the files written."""
    import grpc_tools
    from grpc_tools import protoc

    include = Path(grpc_tools.__file__).parent / "_proto"
    files = [str(p.relative_to(PROTO_ROOT)) for p in proto_files()]
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        *files,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    written: list[Path] = []
    for rel in files:
        stem = Path(rel).with_suffix("")
        for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"):
            written.append(out / f"{stem}{suffix}")
    # the generated package directory needs no __init__.py (PEP 420 namespace)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ns = parser.parse_args(argv)
    for path in generate(ns.out):
        print(path.relative_to(ns.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
