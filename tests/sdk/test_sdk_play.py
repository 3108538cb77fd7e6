"""`python -m cfarena.sdk play`: local games in-process under the referee's match law.

In-process (`cfarena.sdk.cli.main`): no process behaviour is under test. The
SDK-alone run (a fresh venv without the server) is in test_sdk_alone.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cfarena.match.law import timeout_detail
from cfarena.sdk.cli import main
from cfarena.server.replay import load_log_file, read_log_file
from cfarena.server.replay.verify import verify_log

RANDOM_BOT = """\
import random
from cfarena.sdk import Bot

class MyBot(Bot):
    def choose(self, turn):
        return random.choice(turn.legal_moves)
"""

SLOW_BOT = """\
import time
from cfarena.sdk import Bot

class Slow(Bot):
    def choose(self, turn):
        time.sleep(0.3)
        return 0
"""

RAISING_BOT = """\
from cfarena.sdk import Bot

class Broken(Bot):
    def choose(self, turn):
        raise KeyError("oops")

class Other(Bot):
    def choose(self, turn):
        return 0
"""

QUICK = ["--rule", "rounds=single"]


def _bot(tmp_path: Path, text: str = RANDOM_BOT, name: str = "mybot.py") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _play(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["play", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_games_rotate_seats_print_results_and_write_logs_that_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "games.jsonl"
    code, out, err = _play(capsys, _bot(tmp_path), "--vs", "greedy", "--vs", "smart",
                           "--games", "3", "--seed", "40", *QUICK, "--log", str(log))
    assert code == 0, err
    games = [line for line in out.splitlines() if line.startswith("game ")]
    assert [g.split(" (")[0] for g in games] == ["game 1/3", "game 2/3", "game 3/3"]
    logs = [entry for _name, entry in read_log_file(log)]
    assert len(logs) == 3
    for game, entry in enumerate(logs):
        assert isinstance(entry, dict), entry
        assert entry["seed"] == str(40 + game)
        # the bot under test moves one seat on per game, the others follow in order
        seats = ["MyBot", "greedy", "smart"]
        assert entry["seats"] == [seats[(s - game) % 3] for s in range(3)]
        assert entry["time_control"]["move_timeout_ms"] == 1000  # the referee's default
        assert verify_log(entry) == []
        ranked = sorted(range(3), key=lambda s: (entry["result"]["ranks"][s], s))
        assert games[game].endswith(", ".join(
            f"{entry['result']['ranks'][s]}. {entry['seats'][s]} "
            f"{entry['result']['totals'][s]}" for s in ranked))
    summary = {line.split(":")[0]: line for line in out.splitlines()
               if line.split(":")[0] in ("MyBot", "greedy", "smart")}
    assert set(summary) == {"MyBot", "greedy", "smart"}
    wins = {name: sum(e["result"]["ranks"][e["seats"].index(name)] == 1 for e in logs)
            for name in summary}
    for name, line in summary.items():
        assert f"{name}: 3 game(s), {wins[name]} won" in line
    # one game of the file is what `cfarena replay --file FILE MATCH` opens
    assert load_log_file(log, match_id="local-41")["seed"] == "41"


def test_the_same_seed_plays_the_same_games(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bot = _bot(tmp_path, SLOW_BOT.replace("time.sleep(0.3)", "pass"))
    runs = []
    for _ in range(2):
        code, out, err = _play(capsys, bot, "--vs", "smart", "--players", "4", "--seed", "9",
                               "--games", "2", *QUICK)
        assert code == 0, err
        runs.append([line for line in out.splitlines() if line.startswith("game ")])
    assert runs[0] == runs[1]
    # four seats from two bots: the --vs bots fill the table again, named apart
    for name in ("Slow", "smart", "smart-2", "smart-3"):
        assert f". {name} " in runs[0][0]


def test_a_bot_slower_than_the_time_control_times_out_and_forfeits_as_in_the_arena(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "slow.jsonl"
    # 100 ms a move: three times less than Slow takes, and far more than greedy needs
    # on a loaded machine (10 ms, once, was not: greedy too could time out)
    code, out, err = _play(capsys, _bot(tmp_path, SLOW_BOT), "--vs", "greedy", "--seed", "3",
                           "--timeout-ms", "100", *QUICK, "--log", str(log))
    assert code == 0, err
    entry = load_log_file(log)
    (fault,) = entry["faults"]
    slow = entry["seats"].index("Slow")
    assert (fault["seat"], fault["kind"], fault["forfeit"]) == (slow, "timeout", True)
    assert fault["detail"] == timeout_detail(100)
    assert entry["result"]["forfeited"] == [slow]
    assert entry["result"]["ranks"][slow] == 2
    assert verify_log(entry) == []  # the law's verdict is the one verification recomputes
    assert f"fault: Slow (seat {slow}) timeout at its turn 1" in out
    assert "Slow: 1 game(s), 0 won" in out and "1 fault(s), 1 forfeit(s)" in out


def test_a_bot_that_raises_plays_the_first_move_as_the_sdk_runner_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    code, out, err = _play(capsys, _bot(tmp_path, RAISING_BOT) + ":Broken", "--vs", "random",
                           "--seed", "1", *QUICK)
    assert code == 0, err
    assert "choose raised; playing the first offered move" in caplog.text
    assert "KeyError: 'oops'" in caplog.text
    (line,) = [line for line in out.splitlines() if line.startswith("Broken:")]
    assert "Broken: 1 game(s)" in line and "0 fault(s)" in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vs", "grandmaster"], "--vs grandmaster: no sample bot of that name (samples: "
         "random, greedy, smart, montecarlo; or give a bot file or module)"),
        (["--vs", "nowhere.py"], "no such bot file: nowhere.py"),
        (["--games", "0"], "--games must be 1 or more, got 0"),
        (["--players", "1"], "--players must be 2 or more, got 1"),
        (["--vs", "greedy", "--vs", "smart", "--players", "2"],
         "--players 2 has fewer seats than bots (3: yours and 2 --vs)"),
        (["--rules", "chess"], "rule option 'preset': unknown preset 'chess' (known: maltese, "
         "standard, trains) (at a table of 2)"),
        (["--rule", "rounds"], "--rule expects KEY=VALUE, got 'rounds'"),
        (["--timeout-ms", "0"], "--timeout-ms must be 1 or more, got 0"),
        (["--strikes", "0"], "--strikes must be 1 or more, got 0"),
        (["--seed", str(2**63)], "--seed must fit a signed 64-bit integer with --games added, "
         f"got {2**63}"),
        (["--games", "many"], "argument --games: invalid int value: 'many' (see --help)"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    try:
        code, out, err = _play(capsys, _bot(tmp_path), *args)
    except SystemExit as exc:  # argparse's own errors
        code, (out, err) = int(exc.code or 0), capsys.readouterr()
    assert code == 2
    assert err.strip().endswith(message), err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out


def test_bad_targets_and_log_paths_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two = _bot(tmp_path, RAISING_BOT, "two.py")
    for args, message in (
        ([two], f"{two} defines several Bot subclasses (Broken, Other); add :ClassName"),
        ([_bot(tmp_path), "--log", str(tmp_path)], f"--log {tmp_path}: cannot write it: "
         "is a directory"),
    ):
        code, out, err = _play(capsys, *args, *QUICK)
        assert code == 2
        assert err.strip() == f"python -m cfarena.sdk: error: {message}"
        assert not out


def test_the_log_is_json_lines_one_game_a_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "one.jsonl"
    code, _out, err = _play(capsys, _bot(tmp_path), "--seed", "2", *QUICK, "--log", str(log))
    assert code == 0, err
    (line,) = log.read_text().splitlines()
    entry = json.loads(line)
    assert entry["format"] == 2 and entry["seats"] == ["MyBot", "greedy"]  # default: greedy
    assert load_log_file(log) == entry  # one game: `cfarena replay --file FILE` needs no id


def test_ctrl_c_ends_the_run_with_130_and_keeps_the_games_before_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stuck = SLOW_BOT.replace("time.sleep(0.3)",
                             "if turn.match_id == 'local-6':\n            raise KeyboardInterrupt")
    log = tmp_path / "cut.jsonl"
    code, _out, err = _play(capsys, _bot(tmp_path, stuck), "--seed", "5", "--games", "3",
                            *QUICK, "--log", str(log))
    assert code == 130
    assert err.strip() == ("python -m cfarena.sdk: interrupted in game 2 (the log holds the "
                           "games before it)")
    assert [entry["match_id"] for _n, entry in read_log_file(log)] == ["local-5"]
