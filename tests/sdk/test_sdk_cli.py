"""`python -m cfarena.sdk run` as a real subprocess (its usage errors in-process), and the
sample bots."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from cfarena.bots.greedy import GreedyBot
from cfarena.bots.random_bot import RandomBot
from cfarena.engine.moves import PASS, Move
from cfarena.engine.rules import PlayDrawn
from cfarena.engine.tiles import Tile
from cfarena.sdk import MatchInfo, TimeControl, Turn
from cfarena.sdk.cli import load_bot_class, main
from tests.harness.ports import free_port

from .sdk_fake_referee import FakeReferee, Session
from .sdk_samples import RULES, match_end, match_start, observation, start_events, turn, welcome

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CFARENA_")}
    env.update(extra)
    return env


async def _spawn(*args: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cfarena.sdk",
        *args,
        env=env,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 60))


def play_against(script: Callable[[Session], Awaitable[None]],
                 args: Callable[[str], Sequence[str]],
                 env: Callable[[str], dict[str, str]] = lambda _server: _env()) -> str:
    """`python -m cfarena.sdk ARGS` against a FakeReferee playing `script` (`args` and
    `env` are given the referee's address); asserts that it exits 0 and that the
    script ran to its end; what it printed to stderr."""
    errs: list[str] = []

    async def main() -> None:
        ref = FakeReferee(script)
        await ref.start()
        proc = await _spawn(*args(ref.address), env=env(ref.address))
        try:
            _, err = await asyncio.wait_for(proc.communicate(), 30)
            assert proc.returncode == 0, err.decode()
        finally:
            _kill(proc)
        ref.check()
        await ref.stop()
        errs.append(err.decode())

    run(main())
    return errs[0]


def _run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result: list[tuple[int, str]] = []

    async def main() -> None:
        proc = await _spawn(*args, env=env or _env())
        try:
            _, err = await asyncio.wait_for(proc.communicate(), 30)
            assert proc.returncode is not None
            result.append((proc.returncode, err.decode()))
        finally:
            _kill(proc)

    run(main())
    return result[0]


def _in_process(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                *args: str) -> tuple[int, str]:
    """`_run_cli` in this process (`cli.main`, run from the checkout with no CFARENA_
    variable): for usage errors, where no process behaviour is under test."""
    for key in [k for k in os.environ if k.startswith("CFARENA_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exited:  # argparse's usage errors
        assert isinstance(exited.code, int)
        code = exited.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("cfarena.bots.nonexistent", "no such bot module: cfarena.bots.nonexistent"),
        ("no/such/bot.py", "no such bot file: no/such/bot.py"),
        ("cfarena.engine.tiles", "cfarena.engine.tiles defines no Bot subclass"),
        ("cfarena.bots.greedy:Nope", "cfarena.bots.greedy has no Bot subclass named Nope"),
    ],
)
def test_bad_target_exits_2_with_one_line(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str], target: str,
                                          message: str) -> None:
    code, err = _in_process(monkeypatch, capsys, "run", target, "--token", "t")
    assert code == 2
    assert err.strip().splitlines() == [f"python -m cfarena.sdk: error: {message}"]


def test_missing_token_and_bad_flags_exit_2(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _in_process(monkeypatch, capsys, "run", "cfarena.bots.greedy")
    assert code == 2 and "no token" in err and "Traceback" not in err
    code, err = _in_process(monkeypatch, capsys, "run", "cfarena.bots.greedy", "--capacity",
                            "many", "--token", "t")
    assert code == 2 and "invalid int value" in err


def test_several_bots_need_a_class_name(tmp_path: Path) -> None:
    path = tmp_path / "two.py"
    path.write_text(
        "from cfarena.sdk import Bot\n"
        "class A(Bot):\n    def choose(self, turn):\n        return 0\n"
        "class B(A):\n    pass\n"
    )
    with pytest.raises(Exception, match=r"several Bot subclasses \(A, B\); add :ClassName"):
        load_bot_class(str(path))
    assert load_bot_class(f"{path}:B").__name__ == "B"
    assert load_bot_class("cfarena.bots.greedy") is GreedyBot


def test_connection_refused_exits_1() -> None:
    port = free_port()  # nothing listens on it
    code, err = _run_cli(
        "run", "cfarena.bots.greedy", "--server", f"127.0.0.1:{port}", "--token", "t",
        "--retries", "1",
    )
    assert code == 1
    assert f"cannot connect to 127.0.0.1:{port}" in err and "Traceback" not in err


def test_env_vars_are_used_and_a_file_target_plays(tmp_path: Path) -> None:
    bot_file = tmp_path / "mybot.py"
    bot_file.write_text(
        "from cfarena.sdk import Bot\n"
        "class Last(Bot):\n"
        "    def choose(self, turn):\n"
        "        return turn.legal_moves[-1]\n"
    )
    seen: list[tuple[str, int]] = []

    async def script(s: Session) -> None:
        hello = await s.hello()
        assert hello.token == "env-token"
        await s.send(welcome(), match_start("m"), turn("m", 3, start_events()))
        action = await s.action()
        seen.append((action.match_id, action.move_index))
        await s.send(match_end("m", 2))

    play_against(script, lambda _server: ["run", f"{bot_file}:Last"],
                 lambda server: _env(CFARENA_SERVER=server, CFARENA_TOKEN="env-token"))
    assert seen == [("m", 2)]


def test_the_bots_code_runs_with_the_collector_on_and_start_up_frozen(
        tmp_path: Path) -> None:
    """`python -m cfarena.sdk run` loads the SDK with the garbage collector off, and
    turns it on, what it loaded frozen, before the bot's code runs: the bot module's
    import, its constructor and its moves see the collector on at its usual thresholds."""
    bot_file = tmp_path / "gcbot.py"
    bot_file.write_text(
        "import gc, sys\n"
        "from cfarena.sdk import Bot\n"
        "def report(where):\n"
        "    print('GC', where, gc.isenabled(), gc.get_freeze_count(), gc.get_threshold(),\n"
        "          file=sys.stderr, flush=True)\n"
        "report('import')\n"
        "class Reporting(Bot):\n"
        "    def __init__(self):\n"
        "        report('init')\n"
        "    def choose(self, turn):\n"
        "        report('choose')\n"
        "        return turn.legal_moves[0]\n"
    )
    async def script(s: Session) -> None:
        await s.hello()
        await s.send(welcome(), match_start("m"), turn("m", 3, start_events()))
        await s.action()
        await s.send(match_end("m", 0))

    err = play_against(script, lambda server: ["run", str(bot_file), "--server", server,
                                               "--token", "t"])
    reports = [ln for ln in err.splitlines() if ln.startswith("GC ")]
    assert [r.split()[1] for r in reports] == ["import", "init", "choose"], reports
    for line in reports:
        _gc, _where, enabled, frozen, threshold = line.split(" ", 4)
        assert enabled == "True", line
        assert int(frozen) > 10_000, line  # the SDK's objects, not a handful
        assert threshold == str(gc.get_threshold()), line


@pytest.mark.usefixtures("unfrozen_heap")
def test_in_process_main_leaves_the_collector_as_it_was(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`cli.main` called by a program (not `python -m cfarena.sdk`) neither freezes its
    heap nor turns a collector on that the program turned off."""
    before = gc.get_freeze_count()
    gc.disable()
    try:
        code, err = _in_process(monkeypatch, capsys, "run", "cfarena.bots.greedy",
                                "--server", "unix:/nonexistent", "--token", "t",
                                "--retries", "0")
        assert code == 1, err
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert gc.get_freeze_count() == before


def test_sigterm_exits_cleanly() -> None:
    async def main() -> None:
        connected = asyncio.Event()

        async def script(s: Session) -> None:
            await s.hello()
            await s.send(welcome())
            connected.set()
            await asyncio.sleep(30)

        ref = FakeReferee(script)
        await ref.start()
        proc = await _spawn(
            "run", "cfarena.bots.random_bot", "--server", ref.address, "--token", "t",
            env=_env(),
        )
        try:
            await asyncio.wait_for(connected.wait(), 20)
            proc.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(proc.communicate(), 10)
            assert proc.returncode == 0, err.decode()
            assert "Traceback" not in err.decode()
            assert "stopped by SIGTERM" in err.decode()
        finally:
            _kill(proc)
        await ref.stop()

    run(main())


# ------------------------------------------------------------------ sample bots


def _turn(moves: tuple[Move, ...], drawn: Tile | None = None, match_id: str = "m") -> Turn:
    obs = observation(moves=moves, drawn=drawn)
    return Turn(match_id, 1, obs, moves, (), (), 1000, 0, 0.0)


def test_greedy_plays_the_heaviest_tile_deterministically() -> None:
    moves = (Move.play(Tile(1, 2), 0), Move.play(Tile(4, 5), 3), Move.play(Tile(3, 6), 1),
             Move.play(Tile(4, 5), 1), PASS)
    bot = GreedyBot()
    assert bot.choose(_turn(moves)) == Move.play(Tile(3, 6), 1)  # 9 pips, higher end 6
    assert bot.choose(_turn(moves[::-1])) == Move.play(Tile(3, 6), 1)
    assert bot.choose(_turn((PASS,))) == PASS


def test_greedy_plays_a_drawn_tile_it_may_keep() -> None:
    may = replace(RULES, play_drawn=PlayDrawn.MAY)
    moves = (PASS, Move.play(Tile(0, 1), 2))
    obs = replace(observation(moves=moves, drawn=Tile(0, 1)), rules=may)
    assert GreedyBot().choose(Turn("m", 1, obs, moves, (), (), 1000, 0, 0.0)) == moves[1]


def test_random_bot_replays_per_match_and_seat() -> None:
    moves = tuple(Move.play(Tile(a, 9), 0) for a in range(9))
    info = MatchInfo("match-7", 0, RULES, ("a", "b"), TimeControl(1000))

    def picks(match_id: str) -> list[Move]:
        bot = RandomBot()
        bot.on_match_start(replace(info, match_id=match_id))
        return [bot.choose(_turn(moves, match_id=match_id)) for _ in range(12)]

    assert picks("match-7") == picks("match-7")
    assert picks("match-7") != picks("match-8")
    assert all(m in moves for m in picks("match-7"))
