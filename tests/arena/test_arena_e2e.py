"""The competition arena end to end: a real `cfarena serve` on a real PostgreSQL, dial-in
bot processes (the four samples; greedy in two versions at once, montecarlo upgraded
from version 1 to 2 mid-run; each connection plays up to CAPACITY matches at once, so
several tables play together), a bot registered while it runs, a token revoked mid-run
(its connection closed, a later connection refused), a PostgreSQL restart mid-run
(the ladder keeps playing, every finished match stored and rated exactly once), the
games shared evenly, and the ratings ordering the samples."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from cfarena.server.storage import MatchStatus, open_database
from tests.cli.helpers import run_in_process, run_json
from tests.harness.postgres import PgCluster
from tests.harness.serve import SAMPLES, Arena

PLAYERS = "4"
POOL = "standard/4p"
TOTAL = 280  # matches in the run
# matches a connection plays at once: with one, the 6 entrants (5 bots) fill one
# 4-seat table at a time and the run waits on each match's every turn in turn
CAPACITY = "2"


class Procs(Arena):
    """serve and the bots, output in files, all stopped by process group at the end."""

    @property
    def port(self) -> int:
        return self.ports["serve"].bots

    def bot(self, name: str, bot: str, token: str, *args: str,
            env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        return self.dial_in(name, bot, f"127.0.0.1:{self.port}", token, "--retries", "50",
                            "--capacity", CAPACITY, "-q", *args,
                            env={"CFARENA_MC_BUDGET_MS": "2", **(env or {})})


@pytest.fixture
def procs(tmp_path: Path, own_pg: PgCluster) -> Iterator[Procs]:
    p = Procs(tmp_path, own_pg.create_database("arena_e2e"))
    try:
        yield p
    finally:
        p.close()


def _add(procs: Procs, name: str) -> str:
    added = run_in_process("bots", "add", name, "--db", procs.db, cwd=procs.dir)
    assert added.returncode == 0, added.stderr
    return added.stdout.strip().splitlines()[-1]


@pytest.mark.postgres
@pytest.mark.timeout(300)
def test_a_competition_on_postgresql(procs: Procs, own_pg: PgCluster) -> None:
    t0 = time.monotonic()
    tokens = {name: _add(procs, name) for name in [*SAMPLES, "intruder"]}
    procs.serve("--players", PLAYERS, "--rule", "rounds=single", "--concurrency", "3")
    procs.bot("random", "random", tokens["random"])
    procs.bot("greedy-1", "greedy", tokens["greedy"], "--version", "1")
    procs.bot("greedy-2", "greedy", tokens["greedy"], env={"CFARENA_BOT_VERSION": "2"})
    procs.bot("smart", "smart", tokens["smart"])
    procs.bot("montecarlo-1", "montecarlo", tokens["montecarlo"], "--version", "1")
    intruder = procs.bot("intruder", "random", tokens["intruder"])
    procs.wait("80 matches", lambda: len(procs.finished()) >= 80, 120)

    # a token revoked mid-run: its live connection is closed at once, a new one refused
    revoked = run_in_process("bots", "revoke", "intruder", "--db", procs.db, cwd=procs.dir)
    assert revoked.returncode == 0, revoked.stderr
    revoked_at = time.monotonic()
    assert intruder.wait(10) != 0
    closed_after = time.monotonic() - revoked_at
    assert closed_after < 3.0, closed_after
    assert "token revoked" in procs.err("intruder"), procs.err("intruder")
    assert "connection" in procs.err() and "closed (token revoked)" in procs.err()
    again = procs.bot("intruder-again", "random", tokens["intruder"])
    assert again.wait(20) != 0
    assert "unknown or missing token" in procs.err("intruder-again")

    # a bot registered while serve runs plays; montecarlo is upgraded to version 2
    late = _add(procs, "latecomer")
    procs.bot("latecomer", "random", late, "--version", "0.1")
    procs.stop("montecarlo-1")
    procs.bot("montecarlo-2", "montecarlo", tokens["montecarlo"], "--version", "2")
    mark = len(procs.finished())
    procs.wait("80 more matches", lambda: len(procs.finished()) >= mark + 80, 120)

    # PostgreSQL restarts: the ladder goes on, the matches wait to be stored
    in_outage = len(procs.finished())
    own_pg.stop()
    try:
        procs.wait("the storage warning", lambda: "storage unavailable" in procs.err(), 30)
        # the match in play (if any) ends while the database is away (up to 3 s)
        with contextlib.suppress(AssertionError):
            procs.wait("a match ended in the outage",
                       lambda: len(procs.finished()) > in_outage, 3.0)
    finally:
        own_pg.start()
    procs.wait("storage back", lambda: "storage available again" in procs.err(), 60)
    mark = len(procs.finished())
    procs.wait(f"{TOTAL} matches in all, 20 since the restart",
               lambda: len(procs.finished()) >= max(TOTAL, mark + 20), 120)

    serve = procs.procs["serve"]
    serve.send_signal(signal.SIGTERM)
    assert serve.wait(40) == 0, procs.err()
    stderr = procs.err()
    assert "Traceback" not in stderr, stderr
    for name in ("random", "greedy-1", "greedy-2", "smart", "montecarlo-2", "latecomer"):
        assert procs.procs[name].wait(20) == 0, procs.err(name)  # told: shutting down

    logged = procs.finished()
    assert len(logged) == len(set(logged))
    with open_database(procs.db) as db:
        matches = {m.id: m for m in db.list_matches(limit=None)}
        finished = {k for k, m in matches.items() if m.status is MatchStatus.FINISHED}
        # every match whose end was logged is stored as finished, and nothing else is;
        # some of them ended while the database was away
        assert set(logged) == finished
        assert len(logged) > in_outage
        assert all(m.status is not MatchStatus.RUNNING for m in matches.values())
        with db.engine.connect() as conn:
            played = Counter({(str(n), str(v)): int(c) for n, v, c in conn.execute(text(
                "SELECT b.name, s.bot_version, count(*) FROM match_seats s "
                "JOIN bots b ON b.id = s.bot_id JOIN matches m ON m.id = s.match_id "
                "WHERE m.status = 'finished' GROUP BY b.name, s.bot_version"))})
            seeds = [int(s) for (s,) in conn.execute(text("SELECT seed FROM matches"))]
        ladder = {(x.name, x.version): x for x in db.skill_standings(POOL)}
    assert len(seeds) == len(set(seeds))  # no deal twice
    # rated exactly once: each (bot, version)'s rated games are its finished matches
    assert {k: x.games for k, x in ladder.items() if x.games} == dict(played)
    assert set(played) >= {("random", ""), ("greedy", "1"), ("greedy", "2"), ("smart", ""),
                           ("montecarlo", "1"), ("montecarlo", "2"), ("latecomer", "0.1"),
                           ("intruder", "")}
    # the entrants connected all along shared the games evenly
    steady = [played[k] for k in (("random", ""), ("greedy", "1"), ("greedy", "2"),
                                  ("smart", ""))]
    assert max(steady) <= 1.5 * min(steady), played
    # the ratings order the samples. Measured in-process (benchmarks/bot_strength.py,
    # single rounds): random ~60-80 Elo below greedy, greedy ~150-200 below smart and
    # montecarlo, which are level at a 2 ms budget. After ~150 matches the online
    # rating of one version is not sure of a 70-Elo gap (sigma ~1.5-2 mu points), so
    # only the big gaps are asserted, on the mean (mu: the conservative score also
    # reflects how many games a version played). Each montecarlo version plays only
    # part of the run (one CI run had version 2 at mu 26.9 against greedy 1's 27.3),
    # so montecarlo is ordered per bot, by the order-free Bradley-Terry check below. The full
    # order random < greedy < smart < montecarlo needs longer matches and montecarlo's
    # real budget: benchmarks/ladder.py shows it (300 half-round matches, docs/ARENA.md).
    mean = {k: x.mu for k, x in ladder.items()}
    assert max(mean[("greedy", "1")], mean[("greedy", "2")], mean[("random", "")]) \
        < mean[("smart", "")], mean
    per_bot = {r["bot"]: r["bt_elo"] for r in run_json(  # type: ignore[union-attr]
        "standings", "--pool", POOL, "--db", procs.db, cwd=procs.dir, in_process=True)}
    assert max(per_bot["random"], per_bot["greedy"]) < min(per_bot["smart"],
                                                           per_bot["montecarlo"]), per_bot
    # what the CLI shows: the ladder (latest versions) and a bot's own report
    rows = run_json("standings", "--pool", POOL, "--ladder", "--db", procs.db, cwd=procs.dir,
                    in_process=True)
    shown = {r["bot"]: r["version"] for r in rows}  # type: ignore[union-attr]
    assert shown["montecarlo"] == "2" and shown["latecomer"] == "0.1"
    report = run_json("bots", "show", "montecarlo", "--pool", POOL, "--db", procs.db,
                      cwd=procs.dir, in_process=True)
    versions = {v["version"]: v for v in report["versions"]}
    assert set(versions) == {"1", "2"}
    assert all(v["median_ms"] is not None and v["p99_ms"] >= v["median_ms"]
               for v in versions.values())
    elapsed = time.monotonic() - t0
    print(f"\n{len(logged)} matches in {elapsed:.0f} s; revoked token cut off in "
          f"{closed_after:.1f} s; games {dict(played)}; online scores "
          f"{ {f'{n}:{v}': round(s, 2) for (n, v), s in mean.items()} }; "
          f"Bradley-Terry per bot {per_bot}")
