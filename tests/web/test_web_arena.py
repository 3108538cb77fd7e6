"""The web page and JSON API of a real `cfarena serve` (SQLite file, dial-in bot
processes): every route answers with the right content, answers match the OpenAPI
description, admin actions need the admin token and work with it, and, played as a
cheating entrant would, nothing hidden leaks while a match runs (hands, seeds, logs,
tokens), nor a tournament deal before all its rotations are over."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import jsonschema
import pytest

from cfarena.engine import apply_move
from cfarena.engine.moves import Move
from cfarena.match.log_format import log_seed
from cfarena.match.resimulation import resimulate, start_match
from cfarena.server.credentials import hash_token
from cfarena.server.storage import MatchPlan, StoredMatch, open_database
from tests.web.arena import (
    ADMIN_TOKEN,
    WebArena,
    board_full,
    by_id,
    elements,
    response_schema,
    web_arena,
)

BOTS = {"ruby": "montecarlo", "jade": "greedy", "onyx": "random", "opal": "greedy"}
POOL = "standard/4p"
GRACE_S = 0.2  # after a pause, a table being seated may still start this long


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebArena]:
    directory = tmp_path_factory.mktemp("web")
    db = f"sqlite:///{directory / 'arena.db'}"
    with web_arena(directory, db, BOTS, "--concurrency", "2") as running:
        # (the leaderboard's rows may lag its count by up to 2 s: they are cached)
        running.wait("a finished match on the leaderboard",
                     lambda: board_full(running.get("/api/leaderboard").json(), len(BOTS)))
        yield running


@pytest.fixture(scope="module")
def openapi(arena: WebArena) -> dict[str, Any]:
    reply = arena.get("/openapi.json")
    assert reply.status == 200
    doc: dict[str, Any] = reply.json()
    return doc


def _finished(arena: WebArena) -> dict[str, Any]:
    matches = arena.get("/api/matches?status=finished&limit=1").json()
    assert matches, "no finished match"
    match: dict[str, Any] = matches[0]
    return match


# ------------------------------------------------------------------ the pages
def test_leaderboard_page(arena: WebArena) -> None:
    before = arena.get("/api/leaderboard").json()
    page = arena.get("/")
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    board = arena.get("/api/leaderboard").json()
    assert by_id(html, "leaderboard")[0] == "table"
    rows = [a for t, a in elements(html) if t == "tr" and "data-bot" in a]
    assert {r["data-bot"] for r in rows} == set(BOTS)
    cells = [a["data-col"] for t, a in elements(html) if t == "td" and "data-col" in a]
    columns = ["rank", "bot", "version", "rating", "check", "games", "win-share",
               "points-per-round", "faults", "presence"]
    assert cells == columns * len(BOTS)
    count = int(by_id(html, "finished-count")[1]["data-count"])
    assert before["finished"] <= count <= board["finished"]  # matches finish meanwhile
    assert by_id(html, "running")[0] == "ul"
    for bot in BOTS:
        assert f'href="/bots/{bot}"' in html
    # assets are the arena's own: no other host is named
    assert not re.search(r'(src|href)="(https?:)?//', html)
    for asset in ("/static/app.css", "/static/live.js", "/static/favicon.svg"):
        assert arena.get(asset).status == 200, asset


def test_live_page_lists_running_matches(arena: WebArena) -> None:
    html = arena.get("/live").text
    assert by_id(html, "running")[0] == "ul"
    running = {m["id"] for m in arena.get("/api/matches?status=running").json()}
    listed = {a["data-match"] for t, a in elements(html) if t == "li" and "data-match" in a}
    assert listed <= running | {m["id"] for m in arena.get("/api/matches?limit=10").json()}


def test_bot_page(arena: WebArena) -> None:
    html = arena.get("/bots/ruby").text
    chart = by_id(html, "rating-chart")
    assert chart[0] == "div"
    svg = [a for t, a in elements(html) if t == "svg" and a.get("class") == "chart"]
    assert len(svg) == 1 and int(svg[0]["data-points"]) >= 1
    # the chart is the leaderboard's rating, as stored match by match
    info = arena.get("/api/bots/ruby").json()
    last = info["rating_history"][-1]["rating"]
    assert abs(last - info["versions"][-1]["skill_elo"]) < 60
    for ident in ("versions", "recent-matches", "faults", "latency"):
        by_id(html, ident)
    recent = [a["data-match"] for t, a in elements(html) if t == "tr" and "data-match" in a]
    assert recent and all(f'href="/matches/{m}"' in html for m in recent)
    latency = [a for t, a in elements(html) if "data-median-ms" in a]
    assert latency and float(latency[0]["data-median-ms"]) > 0


def test_unknown_things_are_404_pages(arena: WebArena) -> None:
    for path in ("/bots/nobody", "/matches/serve-000000000000", "/no/such/page"):
        reply = arena.get(path)
        assert reply.status == 404, path
        assert reply.headers["content-type"].startswith("text/html")
        assert "Not found" in reply.text
    api = arena.get("/api/bots/nobody")
    assert api.status == 404 and api.json() == {"detail": "no bot named 'nobody'"}
    assert arena.get("/api/matches/nope/log").status == 404
    assert arena.get("/api/matches?status=bogus").status == 422
    assert arena.get("/api/matches?limit=0").status == 422


def test_finished_match_page(arena: WebArena) -> None:
    match = _finished(arena)
    html = arena.get(f"/matches/{match['id']}").text
    main = [a for t, a in elements(html) if t == "main"]
    assert main[0]["data-status"] == "finished"
    by_id(html, "result")
    assert by_id(html, "round-scores")[0] == "table"
    detail = arena.get(f"/api/matches/{match['id']}").json()
    rounds = [a for t, a in elements(html) if t == "tr" and "data-round" in a]
    assert len(rounds) == len(detail["round_scores"]) >= 1
    frame = by_id(html, "replay")
    assert frame[0] == "iframe" and frame[1]["src"] == f"/matches/{match['id']}/replay"
    # its live stream says at once that it is stored, and ends
    stream = arena.sse(f"/api/matches/{match['id']}/live")
    assert stream.done.wait(10) and stream.status == 200
    assert stream.kinds() == ["stored"]
    missing = arena.sse("/api/matches/serve-000000000000/live")
    assert missing.done.wait(10) and missing.status == 404
    replay = arena.get(frame[1]["src"])
    assert replay.status == 200 and "<html" in replay.text.lower()
    assert detail["seed"] in replay.text or str(detail["seed"]) in replay.text


# -------------------------------------------------------------- the JSON API
def test_api_answers_match_the_openapi_description(arena: WebArena,
                                                   openapi: dict[str, Any]) -> None:
    match = _finished(arena)
    checks = [
        ("/api/leaderboard", "/api/leaderboard", 200),
        (f"/api/leaderboard?pool={POOL}", "/api/leaderboard", 200),
        ("/api/bots/jade", "/api/bots/{name}", 200),
        ("/api/bots/nobody", "/api/bots/{name}", 404),
        ("/api/matches", "/api/matches", 200),
        ("/api/matches?bot=onyx&status=finished&limit=3", "/api/matches", 200),
        (f"/api/matches/{match['id']}", "/api/matches/{match_id}", 200),
        ("/api/matches/nope", "/api/matches/{match_id}", 404),
        (f"/api/matches/{match['id']}/log", "/api/matches/{match_id}/log", 200),
    ]
    for url, template, status in checks:
        reply = arena.get(url)
        assert reply.status == status, url
        jsonschema.validate(reply.json(), response_schema(openapi, template, status),
                            cls=jsonschema.Draft202012Validator)
    board = arena.get("/api/leaderboard").json()
    assert [r["rank"] for r in board["rows"]] == list(range(1, len(BOTS) + 1))
    assert [r["score"] for r in board["rows"]] == sorted(
        (r["score"] for r in board["rows"]), reverse=True)
    mine = arena.get("/api/matches?bot=onyx&limit=3").json()
    assert mine and all(any(s["bot"] == "onyx" for s in m["seats"]) for m in mine)
    assert all("seed" not in m for m in arena.get("/api/matches?limit=100").json())
    for path in ("/api/admin/bots", "/api/admin/ladder/pause"):
        reply = arena.post(path, {"name": "x"} if path.endswith("bots") else None, token=None)
        jsonschema.validate(reply.json(), response_schema(openapi, path, 401, "post"),
                            cls=jsonschema.Draft202012Validator)
    assert {"/api/matches/{match_id}/live", "/api/events"} <= set(openapi["paths"])


# ---------------------------------------------------------------------- admin
ADMIN_CALLS = [("/api/admin/bots", {"name": "mallory"}), ("/api/admin/bots/jade/rotate", None),
               ("/api/admin/bots/jade/revoke", None), ("/api/admin/ladder/pause", None),
               ("/api/admin/ladder/resume", None)]


@pytest.mark.parametrize("token", [None, "wrong-token-0123456789", ADMIN_TOKEN + "x", ""])
def test_admin_actions_need_the_admin_token(arena: WebArena, token: str | None) -> None:
    for path, body in ADMIN_CALLS:
        reply = arena.post(path, body, token=token)
        assert reply.status == 401, path
        assert reply.headers.get("www-authenticate") == "Bearer"
        assert reply.json() == {"detail": "missing or wrong admin token"}
    assert arena.get("/api/bots/mallory").status == 404  # nothing was done
    assert arena.get("/api/bots/jade").status == 200


def test_admin_bot_tokens(arena: WebArena) -> None:
    created = arena.post("/api/admin/bots", {"name": "newbie"})
    assert created.status == 200
    token = created.json()["token"]
    assert created.json()["name"] == "newbie" and len(token) >= 32
    assert arena.post("/api/admin/bots", {"name": "newbie"}).status == 409
    for bad in ("bad name!", "", "x" * 65, "new\nline"):  # the CLI's rule (bot_names)
        assert arena.post("/api/admin/bots", {"name": bad}).status == 422, bad
    assert arena.post("/api/admin/bots/nobody/rotate").status == 404
    # a token created over the API connects and plays
    arena.bot("newbie", "random", token)
    arena.wait("newbie plays", lambda: bool(arena.get(
        "/api/matches?bot=newbie&status=finished&limit=1").json()), 40)
    # rotated: the old token's connection is closed, the new one is let in
    rotated = arena.post("/api/admin/bots/newbie/rotate")
    assert rotated.status == 200 and rotated.json()["token"] != token
    arena.wait("the old token cut off", lambda: arena.procs["newbie"].poll() is not None
               or "token replaced" in arena.err(), 10)
    arena.stop("newbie")
    # revoked: its connection is cut off within about a second, no new match for it
    def newbie_matches() -> set[str]:
        return {m["id"] for m in arena.get("/api/matches?bot=newbie&limit=500").json()}

    before_rotation = newbie_matches()
    arena.bot("newbie2", "random", rotated.json()["token"])
    arena.wait("the rotated token plays", lambda: bool(newbie_matches() - before_rotation), 40)
    revoked_at = time.monotonic()
    assert arena.post("/api/admin/bots/newbie/revoke").json()["ok"] is True
    arena.wait("the revoked token cut off", lambda: "token revoked" in arena.err(), 5)
    assert time.monotonic() - revoked_at < 5
    time.sleep(1.0)
    before = newbie_matches()
    time.sleep(1.5)
    assert newbie_matches() == before  # no new table with the revoked bot
    arena.stop("newbie2")


def test_pause_stops_new_tables_and_resume_restarts_them(arena: WebArena) -> None:
    events = arena.sse("/api/events")
    try:
        assert arena.post("/api/admin/ladder/pause").json() == {"paused": True}
        paused_at = time.monotonic()
        # a table the arena was seating as the pause came may still start within the
        # grace: looked for only after it, else a first look could find nothing running
        # before that match is (one such finished after the count was read, 14 != 13)
        arena.wait("running matches finish", lambda: time.monotonic() > paused_at + 2 * GRACE_S
                   and not arena.get("/api/matches?status=running").json(), 30)
        time.sleep(1.5)
        started = [t for t, kind, _d in events.events if kind == "started" and t > paused_at
                   + GRACE_S]
        assert started == []
        finished = arena.get("/api/leaderboard").json()["finished"]
        stored = [m for m in arena.get("/api/matches?status=finished&limit=500").json()
                  if m["pool"] == POOL]
        assert finished == len(stored)  # the count is current, whatever is cached
        time.sleep(0.5)
        assert arena.get("/api/leaderboard").json()["finished"] == finished
    finally:
        resumed = arena.post("/api/admin/ladder/resume")
    assert resumed.json() == {"paused": False}
    resumed_at = time.monotonic()
    arena.wait("a table starts again", lambda: any(
        kind == "started" and t > resumed_at for t, kind, _d in events.events), 10)
    events.close()


# -------------------------------------------------------- a cheating spectator
def _hidden_by_event_count(log: dict[str, Any]) -> dict[int, set[str]]:
    """For each point of the match (its number of events so far): the tiles then in a
    hand or in the boneyard, from the finished match's log."""
    state = start_match(log)

    def hidden() -> set[str]:
        tiles = {str(t) for s in range(state.players) for t in state.hand(s)}
        return tiles | {str(t) for t in state.boneyard()}

    out = {len(state.events): hidden()}
    for action in log["actions"]:
        apply_move(state, Move.parse(str(action["move"])))
        out[len(state.events)] = hidden()
    return out


def _table_tiles(message: dict[str, Any]) -> set[str]:
    """The tiles a message shows on the table now (its events are checked apart)."""
    return {p["tile"] for p in message["layout"]} | {message["round_double"]}


def test_a_running_match_leaks_nothing(arena: WebArena) -> None:
    ladder = arena.sse("/api/events")
    arena.wait("a match starts", lambda: "started" in ladder.kinds(), 20)
    match_id = next(json.loads(d)["match"]
                    for _t, kind, d in ladder.events if kind == "started")
    live = arena.sse(f"/api/matches/{match_id}/live")
    bodies: list[tuple[str, int, str]] = []  # everything served while it ran
    pages = [f"/api/matches/{match_id}", f"/api/matches/{match_id}/log",
             f"/matches/{match_id}", f"/matches/{match_id}/replay", "/api/matches?limit=50",
             "/api/bots/ruby", "/bots/ruby", "/", "/live", "/api/leaderboard"]
    while not {"ended", "stored"} & set(live.kinds()) and not live.done.is_set():
        for path in pages:
            reply = arena.get(path)
            if not {"ended", "stored"} & set(live.kinds()):  # still running when answered
                bodies.append((path, reply.status, reply.text))
    assert live.done.wait(20), "the live stream did not end after the match"
    ladder.close()
    kinds = live.kinds()
    assert kinds[0] == "snapshot" and kinds[-2:] == ["ended", "stored"], kinds
    assert "update" in kinds
    assert bodies, "the match ended before anything was asked"
    # while it ran: no log, no replay, no seed anywhere
    for path, status, text in bodies:
        if path.endswith("/log") or path.endswith("/replay"):
            assert status == 409, (path, text[:200])
        if path == f"/api/matches/{match_id}":
            detail = json.loads(text)
            assert detail["status"] == "running" and detail["seed"] is None
            assert detail["log"] is None and detail["revealed"] is False
        if path == f"/matches/{match_id}":
            assert 'data-status="running"' in text and 'id="live"' in text
    after = arena.get(f"/api/matches/{match_id}").json()
    assert after["revealed"] is True and after["status"] == "finished"
    log = arena.get(f"/api/matches/{match_id}/log").json()
    seed = str(log_seed(log))
    assert after["seed"] == seed
    secrets = [seed, *arena.tokens.values(), *(hash_token(t) for t in arena.tokens.values()),
               ADMIN_TOKEN]
    served = [text for _p, _s, text in bodies] + [d for _t, _k, d in live.events] + [
        d for _t, _k, d in ladder.events]
    for text in served:
        for secret in secrets:
            assert secret not in text
    # no tile of a hand (or of the boneyard) appeared before it was played: the table
    # shows none of the tiles then hidden, and each event is the log's event as played
    # (a draw without its tile)
    hidden = _hidden_by_event_count(log)
    played = resimulate(log).events
    checked = 0
    for _t, kind, data in live.events:
        if kind in ("snapshot", "update"):
            message = json.loads(data)
            assert {"hands", "hand", "seed", "deals", "boneyard_order"}.isdisjoint(message)
            count = message["event_count"]
            assert count in hidden, f"a message at event {count}: not after a move"
            shown = _table_tiles(message) & hidden[count]
            assert not shown, (count, shown)
            for event in message["events"]:
                assert event["i"] < count
                truth = played[event["i"]]
                assert event["kind"] == truth["kind"] and event["seat"] == truth.get("seat")
                if event["kind"] == "draw":
                    assert event["tile"] is None
                else:
                    assert event["tile"] == truth.get("tile"), (event, truth)
            checked += 1
    assert checked >= 2


def test_a_tournament_deal_is_hidden_until_every_rotation_is_over(
        arena: WebArena, openapi: dict[str, Any]) -> None:
    master_seed = 987654321987654321
    deal_seed = 123456789123456789
    with open_database(arena.db) as db:
        ids = {b.name: b.id for b in db.list_bots()}
        tid = db.create_tournament("dup", {
            "seed": master_seed, "players": 4, "games": 1, "rules": {"preset": "standard"},
            "bots": [{"name": n, "command": f"/home/{n}/secret-bot --key {n}-key-0123"}
                     for n in ("ruby", "jade", "onyx", "opal")]})
        seats = [ids["ruby"], ids["jade"], ids["onyx"], ids["opal"]]
        plans = [MatchPlan(f"t0-g0-r{r}", deal_seed, {"preset": "standard"}, 4,
                           seats[r:] + seats[:r], pool="test/dup") for r in range(2)]
        first, second = db.schedule_matches(tid, plans)
        db.mark_running(first)
        db.record_match(StoredMatch(first, round_scores=[[1, 2, 3, 4]], totals=[1, 2, 3, 4],
                                    ranks=[1, 2, 3, 4]))
    hidden_pages = [f"/api/matches/{first}", f"/api/matches/{second}", f"/matches/{first}",
                    f"/matches/{second}", f"/api/matches/{first}/log",
                    f"/matches/{first}/replay", "/api/matches?status=scheduled&limit=500",
                    "/api/matches?limit=500", "/api/bots/ruby", "/bots/ruby",
                    "/api/tournaments", f"/api/tournaments/{tid}", "/tournaments",
                    f"/tournaments/{tid}"]
    detail = arena.get(f"/api/matches/{first}").json()
    assert detail["status"] == "finished" and detail["revealed"] is False
    assert detail["seed"] is None and detail["log"] is None
    assert detail["round_scores"] == [[1, 2, 3, 4]]  # the result itself is shown
    assert arena.get(f"/api/matches/{first}/log").status == 409
    assert arena.get(f"/matches/{first}/replay").status == 409
    assert 'id="replay"' not in arena.get(f"/matches/{first}").text
    pending = arena.get(f"/api/matches/{second}").json()
    assert pending["status"] == "scheduled" and pending["seed"] is None
    for path in hidden_pages:
        text = arena.get(path).text
        assert str(deal_seed) not in text and str(master_seed) not in text, path
        assert "secret-bot" not in text and "-key-0123" not in text, path  # commands
    # the tournament's progress and standings, readable while it is played
    listed = {t["id"]: t for t in arena.get("/api/tournaments").json()}
    assert listed[tid]["progress"] == {"total": 2, "scheduled": 1, "running": 0,
                                       "finished": 1, "aborted": 0}
    assert listed[tid]["bots"] == ["ruby", "jade", "onyx", "opal"]
    one = arena.get(f"/api/tournaments/{tid}").json()
    assert one["standings"][0]["bot"] == "ruby"  # rank 1 of its one match
    # head to head: row bot against column bot, in the standings' order
    matrix = one["matrix"]
    assert matrix["bots"] == [row["bot"] for row in one["standings"]]
    cells = {(a, b): c for a, row in zip(matrix["bots"], matrix["rows"], strict=True)
             for b, c in zip(matrix["bots"], row, strict=True)}
    assert all(cells[b, b] is None for b in matrix["bots"])
    # one game each, in one deal, and the prior's half deal: ruby won (1 + 1/2) / 2
    assert (cells["ruby", "opal"]["score"], cells["ruby", "opal"]["matches"]) == (0.75, 1)
    assert cells["opal", "ruby"]["score"] == 0.25
    assert one["gauntlet"] is None and one["standings"][0]["gauntlet"] is None
    assert {m["id"] for m in one["matches"]} == {first, second}
    page = arena.get(f"/tournaments/{tid}").text
    assert 'data-finished="1" data-total="2"' in page and 'data-bot="ruby"' in page
    assert 'id="matrix"' in page and page.count("data-against=") == 4 * 3
    assert f'data-tournament="{tid}"' in arena.get("/tournaments").text
    assert arena.get("/api/tournaments/999999").status == 404
    for url, template in (("/api/tournaments", "/api/tournaments"),
                          (f"/api/tournaments/{tid}", "/api/tournaments/{tournament_id}")):
        jsonschema.validate(arena.get(url).json(), response_schema(openapi, template, 200),
                            cls=jsonschema.Draft202012Validator)
    assert arena.get("/tournaments/999999").status == 404
    with open_database(arena.db) as db:  # rotation 2 is played: the deal may be shown
        db.mark_running(second)
        db.record_match(StoredMatch(second, round_scores=[[4, 3, 2, 1]], totals=[4, 3, 2, 1],
                                    ranks=[4, 3, 2, 1]))
    shown = arena.get(f"/api/matches/{first}").json()
    assert shown["revealed"] is True and shown["seed"] == str(deal_seed)
    done = arena.get(f"/api/tournaments/{tid}").json()
    assert done["progress"]["finished"] == 2 and done["progress"]["scheduled"] == 0
    assert str(master_seed) not in arena.get("/api/matches?limit=500").text


def test_names_are_escaped(arena: WebArena) -> None:
    name = "<img src=x onerror=alert(1)>"
    with open_database(arena.db) as db:
        db.register_bot(name, hash_token("token-of-the-script-kiddie-0123"))
    reply = arena.get("/bots/" + quote(name, safe=""))
    assert reply.status == 200
    assert name not in reply.text and "&lt;img src=x onerror=alert(1)&gt;" in reply.text
    missing = arena.get("/bots/" + quote("<b>nobody</b>", safe=""))
    assert missing.status == 404 and "<b>nobody</b>" not in missing.text
