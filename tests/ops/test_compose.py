"""docker-compose.yml and the image's entrypoint without a Docker engine (this machine
has none): the file's structure (no token or password written in it, every secret read
from the generated secrets volume, an admin token for the web API, the bots' port
published only with those), the Dockerfile's bubblewrap, and docker/entrypoint.sh's
`init` run for real (secrets made once, never replaced, readable by their owner only;
`serve` and `bot` refuse to start without them). The services themselves run as plain
processes in tests/ops/test_arena_e2e.py."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

from tests.ops.compose import COMPOSE, ENTRYPOINT, HOUSE_BOTS, ROOT, services

SECRET_WORDS = re.compile(r"(?i)token|password|passwd|secret|key")
SECRETS_DIR = "/run/cfarena"


def _values(node: Any) -> list[tuple[str, str]]:
    """(key, value) of every scalar in a service (environment, command, ...)."""
    out: list[tuple[str, str]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            out += [(str(key), str(value))] if not isinstance(value, dict | list) else \
                _values(value)
    elif isinstance(node, list):
        for item in node:
            out += _values(item) if isinstance(item, dict | list) else [("", str(item))]
    return out


def test_the_compose_file_holds_no_secret() -> None:
    text = COMPOSE.read_text()
    assert "change-me" not in text and ":-" not in text  # no default of any variable
    for name, service in services().items():
        env = service.get("environment") or {}
        assert isinstance(env, dict), f"{name}: environment as a mapping"
        for key, value in env.items():
            if SECRET_WORDS.search(key):  # a secret's variable names a file, never a value
                assert key.endswith("_FILE") and str(value).startswith(SECRETS_DIR + "/"), \
                    (name, key, value)
        for key, value in _values(service):
            # no URL with credentials, no option given a secret's value
            assert not re.search(r"://[^/@\s]+:[^/@\s]+@", value), (name, value)
            assert not re.search(r"--(token|password)\b", value), (name, key, value)


def test_every_secret_comes_from_the_generated_volume() -> None:
    found = services()
    init = found["secrets"]
    assert init["command"] == ["init"]
    assert "secrets:/run/cfarena" in init["volumes"]
    db = found["db"]
    assert db["environment"]["POSTGRES_PASSWORD_FILE"] == f"{SECRETS_DIR}/db.password"
    assert db["depends_on"]["secrets"]["condition"] == "service_completed_successfully"
    for name, service in found.items():
        if name != "secrets" and name != "db":
            assert f"secrets:{SECRETS_DIR}:ro" in service["volumes"], name
    referee = found["referee"]
    assert referee["command"][0] == "serve"  # the entrypoint adds --admin-token-file
    assert {p.split(":")[-1] for p in referee["ports"]} == {"50051", "8080"}
    bots = {name: s for name, s in found.items() if name.startswith("bot-")}
    assert sorted(bots) == sorted(f"bot-{b}" for b in HOUSE_BOTS)
    for name, service in bots.items():
        assert service["command"][:2] == ["bot", name.removeprefix("bot-")], service
        assert "CFARENA_TOKEN" not in service["environment"]  # from its token file


def test_the_image_has_bubblewrap_and_the_entrypoint() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"apt-get install [^\n]*bubblewrap", text)
    assert 'ENTRYPOINT ["cfarena-entrypoint"]' in text
    assert "COPY docker/entrypoint.sh /usr/local/bin/cfarena-entrypoint" in text
    assert os.access(ENTRYPOINT, os.X_OK)


def _entrypoint(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CFARENA_SECRETS": str(tmp_path / "secrets"),
           "CFARENA_POSTGRES_UID": str(os.getuid())}
    env.pop("CFARENA_DB", None)
    return subprocess.run(["sh", str(ENTRYPOINT), *args], env=env, capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)


def test_init_makes_each_secret_once(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    refused = _entrypoint(tmp_path, "bot", "random", "cfarena.bots.random_bot")
    assert refused.returncode == 2 and "run `entrypoint.sh init` first" in refused.stderr
    made = _entrypoint(tmp_path, "init")
    assert made.returncode == 0, made.stderr
    names = {"db.password", "admin.token", *(f"{b}.token" for b in HOUSE_BOTS)}
    assert {p.name for p in secrets.iterdir()} == names
    values = {p.name: p.read_text().strip() for p in secrets.iterdir()}
    assert len(set(values.values())) == len(names)  # each its own
    assert all(len(v) >= 40 for v in values.values()), values
    for path in secrets.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    # an operator's own secret is kept, and a second start changes nothing
    (secrets / "admin.token").write_text("operator-chosen-admin-token\n")
    again = _entrypoint(tmp_path, "init")
    assert again.returncode == 0, again.stderr
    assert (secrets / "admin.token").read_text() == "operator-chosen-admin-token\n"
    assert {p.name: p.read_text().strip() for p in secrets.iterdir()} == {
        **values, "admin.token": "operator-chosen-admin-token"}
    # any other command gets the database URL built from the password file
    shown = _entrypoint(tmp_path, "sh", "-c", 'printf %s "$CFARENA_DB"')
    assert shown.stdout == (f"postgresql+psycopg://cfarena:{values['db.password']}"
                            "@db/cfarena"), shown


def test_serve_refuses_to_start_without_its_secrets(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    refused = _entrypoint(tmp_path, "serve")
    assert refused.returncode == 2, refused
    assert "no secret" in refused.stderr and "db.password" in refused.stderr
