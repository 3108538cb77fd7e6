"""Build hook of the server distribution: its wheel depends on the SDK of this checkout.

The SDK is its own distribution, `cfarena-sdk` (client_sdk/pyproject.toml),
and is not on PyPI. A wheel of `cfarena` (what `pip install .` builds and
installs) therefore requires `cfarena-sdk @ file:///<this checkout>/client_sdk`,
which pip builds and installs alongside it.

The editable install (`pip install -e .`) does not: there client_sdk/ is on
sys.path as source, next to server/ and bots/ (`dev-mode-dirs`). Requiring
the SDK there too would install a copy of it into site-packages, and that copy,
earlier on sys.path, would shadow the checkout's cfarena.engine, cfarena.sdk
and cfarena.v1: edits to client_sdk/ would go unseen until a reinstall. The
SDK's own requirements (grpcio, protobuf) are the server's too and are listed
in pyproject.toml (tests/test_packaging.py checks that they stay so).

pip reads what a wheel requires from the built wheel, so dependencies added
here are the ones it installs (hatchling does not offer pip the metadata-only
hooks that would skip build hooks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class SdkDependency(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "standard":
            sdk = Path(self.root, "client_sdk").resolve()
            build_data["dependencies"].append(f"cfarena-sdk @ {sdk.as_uri()}")
