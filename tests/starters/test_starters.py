"""The starter kits play through the real referee and sandbox: a tournament of the
Node.js kit, the Go kit and the bundled greedy bot ends without a fault, and the kits,
greedy like it, score exactly what it scores; the Node.js kit started without its
module directory shown to the sandbox says which module is missing and how to show it."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import run_cli, run_json
from tests.harness.sandboxes import run_sandboxes

SMALL = ("--games", "1", "--rule", "rounds=single")


def test_the_starter_kits_play_a_sandboxed_tournament_as_greedy_does(
        node_kit: Path, go_kit: Path, tmp_path: Path) -> None:
    data = run_json("run-tournament", "--bot", f"node=node {node_kit / 'bot.js'}",
                    "--sandbox-bind", str(node_kit),
                    "--bot", f"go={go_kit / 'cfarena-greedy'}", "--bot", "greedy",
                    "--players", "3", *SMALL, "--rule", "play_drawn=may", cwd=tmp_path)
    assert data["status"] == "finished" and data["matches"] == 3
    rows = {row["bot"]: row for row in data["standings"]}
    assert set(rows) == {"node", "go", "greedy"}
    for row in rows.values():
        assert (row["matches"], row["faults"], row["forfeits"]) == (3, 0, 0), row
    # every bot sits in every seat of the one deal: playing greedy's moves, the kits
    # score exactly what greedy scores (a misread field, e.g. a parent node or a drawn
    # tile that may be kept, would not)
    assert rows["node"]["mean_score"] == rows["go"]["mean_score"] == \
        rows["greedy"]["mean_score"]
    assert rows["node"]["wins"] == rows["go"]["wins"] == rows["greedy"]["wins"]
    assert run_sandboxes(tmp_path, zombies=False) == []


def test_the_node_kit_without_its_modules_shown_names_the_module_and_the_bind_option(
        node_kit: Path, tmp_path: Path) -> None:
    # the sandbox shows the file on the command line, not the node_modules beside it
    result = run_cli("run-tournament", "--bot", f"node=node {node_kit / 'bot.js'}",
                     "--bot", "greedy", "--players", "2", *SMALL, cwd=tmp_path)
    assert result.returncode != 0
    assert "Cannot find module '@grpc/grpc-js'" in result.stderr, result.stderr[-3000:]
    assert "--sandbox-bind" in result.stderr, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert run_sandboxes(tmp_path, zombies=False) == []
