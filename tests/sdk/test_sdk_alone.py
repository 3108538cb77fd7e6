"""The SDK as a bot author gets it: `pip install ./client_sdk` alone, in a fresh venv.

The venv gets the `cfarena-sdk` distribution and what it requires (grpcio,
protobuf) from the package index, nothing of this checkout's environment. A
five-line bot run by that venv's `python -m cfarena.sdk run` plays a whole
match against a real referee (started here, in the test's environment), its
`python -m cfarena.sdk play` plays local games against the sample bots (which
ship with the SDK) and writes logs the server verifies, and nothing of the
server is importable there.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import shlex
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from cfarena.engine import Rules
from cfarena.server.referee import MatchRecord, TimeControl
from cfarena.server.replay.verify import verify_log
from tests.referee.harness import RawBotProcess, table, token_for

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "client_sdk"

FIVE_LINES = """\
import random
from cfarena.sdk import Bot

class RandomBot(Bot):
    def choose(self, turn):
        return random.choice(turn.legal_moves)
"""

# what the fresh venv must not have: the server's requirements and the server itself
SERVER_ONLY = [
    "sqlalchemy", "alembic", "typer", "rich", "psycopg", "cfarena.server",
]

PROBE = """\
import importlib.util, json, sys
import cfarena.engine, cfarena.sdk, cfarena.v1.arena_pb2
names = json.loads(sys.argv[1])
print(json.dumps({
    "found": [n for n in names if importlib.util.find_spec(n) is not None],
    "sdk": cfarena.sdk.__file__,
    "engine": cfarena.engine.__file__,
}))
"""


def _requirement_names(requirements: list[str]) -> set[str]:
    names = set()
    for req in requirements:
        name = req.split(";")[0].split("@")[0]
        for sep in "<>=!~[ ":
            name = name.split(sep)[0]
        names.add(name.strip().lower())
    return names


def _pyproject(path: Path) -> dict[str, object]:
    with open(path, "rb") as f:
        project: dict[str, object] = tomllib.load(f)["project"]
    return project


def test_sdk_requires_grpcio_and_protobuf_only_and_the_server_lists_them_too() -> None:
    sdk = _pyproject(SDK / "pyproject.toml")
    server = _pyproject(ROOT / "pyproject.toml")
    assert sdk["name"] == "cfarena-sdk"
    sdk_deps = sdk["dependencies"]
    server_deps = server["dependencies"]
    assert isinstance(sdk_deps, list) and isinstance(server_deps, list)
    assert _requirement_names(sdk_deps) == {"grpcio", "protobuf"}
    # the editable install puts client_sdk/ on sys.path without installing
    # cfarena-sdk (hatch_build.py says why): its requirements must be the server's too
    assert set(sdk_deps) <= set(server_deps)


def test_sdk_sources_import_nothing_of_the_server() -> None:
    offenders = []
    for path in sorted((SDK / "cfarena").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [
                f"{path.relative_to(ROOT)}: {n}"
                for n in names
                if n.split(".")[:2] == ["cfarena", "server"]
            ]
    assert not offenders


def test_the_server_wheel_requires_this_sdk_and_ships_none_of_its_files(tmp_path: Path) -> None:
    """What `pip install .` installs: cfarena (the server) requiring cfarena-sdk by file URL."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path),
         str(ROOT)],
        env=_clean_env(), capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = tmp_path.glob("cfarena-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [
            line.removeprefix("Requires-Dist: ")
            for line in z.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist: ")
        ]
    assert f"cfarena-sdk @ {SDK.as_uri()}" in requires
    packages = {n.rsplit("/", 1)[0] for n in names if n.endswith(".py")}
    assert "cfarena/server" in packages
    assert not [p for p in packages if p.split("/")[:2] in (
        ["cfarena", "sdk"], ["cfarena", "engine"], ["cfarena", "v1"], ["cfarena", "match"],
        ["cfarena", "bots"],
    )]


def _pip(python: Path, *args: str, cwd: Path | None = None
         ) -> subprocess.CompletedProcess[str]:
    """This environment's pip acting on the environment of `python` (`pip --python`):
    the fresh venv needs no pip of its own (installing one costs more than the SDK)."""
    return subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), *args],
        env=_clean_env(), cwd=cwd, capture_output=True, text=True, timeout=600,
    )


@pytest.fixture(scope="module")
def sdk_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with `pip install ./client_sdk` done in it; its python."""
    env_dir = tmp_path_factory.mktemp("sdk-alone") / "venv"
    venv.EnvBuilder(with_pip=False, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    done = _pip(python, "install", "--quiet", str(SDK), cwd=env_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    return python


def _clean_env() -> dict[str, str]:
    """This process's environment minus what would leak the checkout into the venv."""
    env = {
        k: v for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    }
    env["PYTHONNOUSERSITE"] = "1"
    return env


def test_the_venv_has_the_sdk_and_nothing_of_the_server(sdk_venv: Path) -> None:
    venv_dir = sdk_venv.parent.parent
    done = subprocess.run(
        [str(sdk_venv), "-c", PROBE, json.dumps(SERVER_ONLY)],
        env=_clean_env(), cwd=venv_dir, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout)
    assert probe["found"] == []
    # the SDK runs from the venv's site-packages, not from this checkout
    for module in ("sdk", "engine"):
        assert Path(probe[module]).is_relative_to(venv_dir), probe[module]
    listed = _pip(sdk_venv, "list", "--format=json")
    assert listed.returncode == 0, listed.stderr
    installed = {d["name"].lower() for d in json.loads(listed.stdout)}
    assert "cfarena-sdk" in installed and "cfarena" not in installed


async def _play(tmp: Path, python: Path) -> tuple[MatchRecord, str, int | None]:
    bot_dir = tmp / "author"
    bot_dir.mkdir()
    (bot_dir / "mybot.py").write_text(FIVE_LINES)
    rules = Rules.preset("standard").with_options(rounds=2)
    async with table(tmp / "table", ["mine", "other"]) as t:
        # run from the bot's own directory, as its author would (not the checkout)
        command = f"cd {shlex.quote(str(bot_dir))} && exec {shlex.quote(str(python))}"
        mine = RawBotProcess(
            "mine",
            ["/bin/sh", "-c", f"{command} -m cfarena.sdk run mybot.py"],
            env={
                **_clean_env(),
                "CFARENA_SERVER": t.server.address,
                "CFARENA_TOKEN": token_for("mine"),
            },
            log_path=tmp / "mine.log",
        )
        mine.start()
        t.procs.append(mine)
        t.raw("other", "good")
        await t.server.wait_for_bots(["mine", "other"], timeout=60)
        record = await t.server.run_match(
            "alone", rules, 7, ["mine", "other"], TimeControl(move_timeout_ms=5000)
        )
        alive = mine.poll()
    return record, t.output(mine), alive


def test_a_five_line_bot_on_the_sdk_alone_plays_a_match_to_its_end(
    sdk_venv: Path, tmp_path: Path
) -> None:
    record, output, exited = asyncio.run(_play(tmp_path, sdk_venv))
    assert exited is None, output  # still connected when the match ended
    assert record.status == "finished", record.reason
    assert not record.faults and not record.forfeited, (record.faults, output)
    assert len(record.round_scores) == 2
    # seat 0 made its own decisions, and the referee never played for it
    assert any(a.seat == 0 and a.decided for a in record.actions)
    assert not any(a.fallback for a in record.actions)
    assert "Traceback" not in output, output


def test_local_play_on_the_sdk_alone_writes_logs_the_server_verifies(
    sdk_venv: Path, tmp_path: Path
) -> None:
    (tmp_path / "mybot.py").write_text(FIVE_LINES)
    done = subprocess.run(
        [str(sdk_venv), "-m", "cfarena.sdk", "play", "mybot.py", "--vs", "greedy", "--vs",
         "smart", "--games", "2", "--seed", "11", "--rule", "rounds=single",
         "--log", "games.jsonl"],
        env=_clean_env(), cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert [line.split(" (")[0] for line in done.stdout.splitlines()
            if line.startswith("game ")] == ["game 1/2", "game 2/2"]
    logs = [json.loads(line) for line in (tmp_path / "games.jsonl").read_text().splitlines()]
    assert [log["seats"] for log in logs] == [["RandomBot", "greedy", "smart"],
                                              ["smart", "RandomBot", "greedy"]]
    assert [verify_log(log) for log in logs] == [[], []]
