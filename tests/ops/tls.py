"""A self-signed certificate for 127.0.0.1/localhost, made with the openssl binary."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def self_signed(directory: Path) -> tuple[Path, Path]:
    """(certificate, key) PEM files in `directory`."""
    openssl = shutil.which("openssl")
    assert openssl is not None, "the openssl binary is needed to make a test certificate"
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj",
         "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60)
    return cert, key
