"""`cfarena serve --admin-token-file` and `--trusted-proxy`: a bad file or address,
or a missing --http-port, is a one-line error (exit 2), before anything is started
(in-process: nothing is started to watch; the file's other problems: `read_admin_token`
in test_web_units.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import run_in_process


@pytest.mark.parametrize(("setup", "args", "error"), [
    (None, ["--http-port", "0", "--admin-token-file", "missing"],
     "error: --admin-token-file missing: no such file"),
    ("0123456789abcdef01\n", ["--admin-token-file", "token"],
     "error: --admin-token-file needs --http-port"),
    (None, ["--http-port", "0", "--trusted-proxy", "proxy.example"],
     "error: --trusted-proxy 'proxy.example': not an IP address or network"),
    (None, ["--trusted-proxy", "10.0.0.1"], "error: --trusted-proxy needs --http-port"),
])
def test_admin_token_file_errors(tmp_path: Path, setup: str | None, args: list[str],
                                 error: str) -> None:
    if setup is not None:
        (tmp_path / "token").write_text(setup)
    db = f"sqlite:///{tmp_path / 'a.db'}"
    result = run_in_process("serve", "--port", "0", *args, "--db", db, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == error
    assert not (tmp_path / "a.db").exists()  # refused before the database was opened
