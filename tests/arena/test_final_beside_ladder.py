"""The organiser's story on one PostgreSQL database: a ladder (`cfarena serve`) with two
bots dialing in and playing; then, while they stay connected, a fixed-seed final
(`cfarena run-tournament`, played by the database's job queue worker) whose entrants
carry the ladder bots' own names. The final's entrants are its own records: the ladder
bots keep their connections, tokens, versions and ratings, `bots list` is unchanged, and
the final's standings and ratings come from its own matches only. Then the results go
out in one step each: `export --tournament` writes every game of the final, `verify
--file` finds them all genuine, and the ladder's own web page publishes the final's
results page (standings, head-to-head cross-table, every match) and the same games as
its "download all games"."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from cfarena.server.storage import open_database
from tests.cli.helpers import run_in_process, run_json
from tests.harness.postgres import PgCluster
from tests.harness.serve import SAMPLES, Arena

BOTS = {"alice": "greedy", "bob": "random"}  # name -> the sample each one runs
SMALL = ("--players", "2", "--rule", "rounds=single")


@pytest.fixture
def arena(tmp_path: Path, pg_cluster: PgCluster) -> Iterator[Arena]:
    a = Arena(tmp_path, pg_cluster.create_database("final_beside_ladder"))
    try:
        yield a
    finally:
        a.close()


def _ladder(arena: Arena) -> dict[str, object]:
    """What the final must leave alone: `bots list`, the bots' records (tokens' hashes,
    commands), the versions they played with."""
    listed = run_in_process("bots", "list", "--db", arena.db, cwd=arena.dir)
    assert listed.returncode == 0, listed.stderr
    db = open_database(arena.db)
    try:
        return {"list": listed.stdout, "bots": db.list_bots(),
                "versions": {n: {v.version for v in db.bot_versions(n)} for n in BOTS}}
    finally:
        db.close()


@pytest.mark.postgres
@pytest.mark.timeout(240)
def test_a_final_on_the_ladders_database_leaves_the_ladder_alone(arena: Arena) -> None:
    tokens = {}
    for name in BOTS:
        added = run_in_process("bots", "add", name, "--db", arena.db, cwd=arena.dir)
        assert added.returncode == 0, added.stderr
        tokens[name] = added.stdout.strip().splitlines()[-1]
    ports = arena.serve(*SMALL, "--concurrency", "1", http=True)
    port = ports.bots
    dialed = {name: arena.dial_in(name, sample, f"127.0.0.1:{port}", tokens[name],
                                  "--version", "1", "--retries", "20", "-q")
              for name, sample in BOTS.items()}
    arena.wait("2 ladder matches", lambda: len(arena.finished()) >= 2, 60)
    before = _ladder(arena)

    final = run_json(
        "run-tournament", "--name", "Final", "--seed", "20261206", *SMALL, "--games", "1",
        "--no-sandbox", "--db", arena.db,
        *[arg for name, sample in BOTS.items() for arg in
          ("--bot", f"{name}={sys.executable} -m cfarena.sdk run {SAMPLES[sample]}")],
        cwd=arena.dir)
    assert final["status"] == "finished"
    played_before_end = len(arena.finished())
    # still connected: the ladder goes on with the same processes after the final
    arena.wait("a ladder match after the final",
               lambda: len(arena.finished()) > played_before_end, 60)
    assert all(p.poll() is None for p in dialed.values())
    for name in BOTS:
        assert "UNAUTHENTICATED" not in arena.err(name), arena.err(name)
    assert "token replaced" not in arena.err()
    assert _ladder(arena) == before  # bots list, tokens, commands, versions ({"1"})

    tid = final["tournament_id"]
    db = open_database(arena.db)
    try:
        ladder = {b.id: b.name for b in db.list_bots()}
        entrants = db.tournament_bots(tid)
        assert sorted(entrants.values()) == sorted(BOTS) and not set(entrants) & set(ladder)
        with db.engine.connect() as conn:
            # every rating of a ladder bot is a ladder match's, in a ladder pool; every
            # rating of an entrant is a match of the final, in the final's pool
            rated = conn.execute(text(
                "SELECT h.bot_id, h.pool, m.tournament_id FROM skill_history h "
                "JOIN matches m ON m.id = h.match_id UNION "
                "SELECT r.bot_id, r.pool, m.tournament_id FROM rating_history r "
                "JOIN matches m ON m.id = r.match_id")).all()
        for bot_id, pool, tournament in rated:
            if bot_id in ladder:
                assert tournament is None and pool in ("global", "standard/2p")
            else:
                assert (bot_id in entrants, tournament, pool) == (True, tid, f"tournament/{tid}")
        board = db.skill_standings("global")
        assert {(s.name, s.version) for s in board} == {(n, "1") for n in BOTS}
        final_matches = db.list_matches(tid, limit=None)
        assert len(final_matches) == final["matches"]
    finally:
        db.close()
    # the final's table: its entrants, its matches only (each of its matches seats both)
    table = run_json("standings", "--tournament", str(tid), "--db", arena.db, cwd=arena.dir,
                     in_process=True)
    assert {row["bot"]: row["matches"] for row in table} == dict.fromkeys(BOTS, final["matches"])

    # results in one step each: exported, verified, published by the ladder's web page
    exported = arena.dir / "final.jsonl"
    out = run_in_process("export", "--tournament", str(tid), "-o", str(exported), "--db",
                         arena.db, cwd=arena.dir)
    assert out.returncode == 0, out.stderr
    games = exported.read_text().splitlines()
    assert len(games) == final["matches"]
    assert {int(json.loads(line)["seed"]) for line in games} == {m.seed for m in final_matches}
    verified = run_json("verify", "--file", str(exported), cwd=arena.dir, in_process=True)
    assert verified["ok"] and len(verified["logs"]) == final["matches"]
    site = arena.dir / "final-site"
    published = run_json("publish", str(tid), str(site), "--db", arena.db, cwd=arena.dir,
                         in_process=True)
    assert published["matches"] == final["matches"] and published["left_out"] == 0
    assert (site / "games.jsonl").read_text().splitlines() == games
    assert all((site / "matches" / f"{m.id}.html").is_file() for m in final_matches)
    web = f"http://127.0.0.1:{ports.http}"
    with urllib.request.urlopen(f"{web}/tournaments/{tid}", timeout=10) as page:
        html = page.read().decode()
    assert 'id="matrix"' in html and 'id="download-games"' in html
    assert all(f'data-match="{m.id}"' in html for m in final_matches)
    assert all(f'<tr data-bot="{name}">' in html for name in BOTS)
    with urllib.request.urlopen(f"{web}/api/tournaments/{tid}/games", timeout=10) as download:
        assert download.read().decode().splitlines() == games
