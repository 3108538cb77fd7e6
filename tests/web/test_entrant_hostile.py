"""The entrant's pages (/me) of a real `cfarena serve` (SQLite file, two dial-in ladder
bots playing, and a 2-player tournament stored beside them), read over real HTTP as a
cheating entrant would: a session of one bot never reads another bot's output, a tile
its seat never saw, nor a seed before the deal is revealed, whatever ids, parameters
or cookies it sends; a wrong, rotated or forged token or cookie is refused; sign-in and
sign-out are safe from other sites' forms."""

from __future__ import annotations

import base64
import json
import re
import zlib
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from cfarena.server.storage import open_database
from cfarena.server.web import entrant_data
from tests.web.arena import ADMIN_TOKEN, WebArena, web_arena
from tests.web.entrant_games import (
    DEAL_SEED,
    OTHER_SEED,
    Tournament,
    output_marker,
    play,
    seen_tiles,
    store_tournament,
    tiles_in,
    unseen_tiles,
)
from tests.web.visitor import Visitor

LADDER = {"amber": "greedy", "basil": "random"}


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebArena]:
    directory = tmp_path_factory.mktemp("entrant")
    db = f"sqlite:///{directory / 'arena.db'}"
    with web_arena(directory, db, LADDER, "--players", "2", "--rule", "rounds=single"
                   ) as running:
        running.wait("a finished ladder match",
                     lambda: bool(running.get("/api/matches?status=finished").json()))
        yield running


@pytest.fixture(scope="module")
def tournament(arena: WebArena) -> Tournament:
    with open_database(arena.db) as db:
        return store_tournament(db)


def web_key(arena: WebArena, tid: int, name: str) -> str:
    reply = arena.post(f"/api/admin/tournaments/{tid}/entrants/{name}/web-key")
    assert reply.status == 200, reply.text
    token: str = reply.json()["token"]
    return token


def signed_in(arena: WebArena, token: str) -> Visitor:
    visitor = Visitor(arena.http_port)
    assert visitor.sign_in(token) == 303
    assert "cfarena_entrant" in visitor.cookies
    return visitor


def without_csrf(text: str) -> str:
    """A page without its CSRF token (random text that could spell a tile)."""
    return re.sub(r'name="csrf" value="[^"]*"', "", text)


def test_a_ladder_entrant_sees_its_own_seat_only(arena: WebArena) -> None:
    amber = signed_in(arena, arena.tokens["amber"])
    status, home = amber.get("/me")
    assert status == 200 and 'data-bot="amber"' in home
    finished = arena.get("/api/matches?status=finished&bot=amber").json()
    assert finished
    listed = dict(re.findall(r'data-match="([^"]+)" data-bot-match="([^"]+)"', home))
    for m in finished:  # a ladder match's bots are told its stored id
        assert listed[m["id"]] == m["id"]
    # a match with tiles amber never saw (the other hand, the boneyard): not every one
    # has them (ci24 met one where amber had seen every tile by its end)
    for match in finished:
        seat = next(s["seat"] for s in match["seats"] if s["bot"] == "amber")
        log = arena.get(f"/api/matches/{match['id']}/log").json()
        hidden = unseen_tiles(log, seat)
        if hidden:
            break
    assert hidden, "no finished match of amber's has a tile amber never saw"
    for path in (f"/me/matches/{match['id']}", f"/me/matches/{match['id']}?seat={1 - seat}",
                 f"/me/matches/{match['id']}?bot=basil"):
        status, text = amber.get(path)
        assert status == 200, path
        assert f'class="turns" data-seat="{seat}"' in text
        assert f'data-seat="{1 - seat}"' not in text, path
        assert tiles_in(without_csrf(text), hidden) == set(), path
    # the turns as the seat saw them: each decision's offered moves hold its choice
    status, text = amber.get(f"/me/matches/{match['id']}")
    turns = [a for a in log["actions"] if a["seat"] == seat and "turn_id" in a]
    assert text.count("<tr data-turn=") == len(turns) > 0
    assert tiles_in(text, seen_tiles(log, seat))  # the check above can see tiles
    found = 0
    after = ""
    while True:  # every page of the download (it may be more than one)
        status, lines = amber.get(f"/me/games.jsonl{after}")
        assert status == 200
        records = [(json.loads(line), line) for line in lines.splitlines()]
        for record, line in records:
            mine = [v["seat"] for v in record["views"]]
            assert mine == [record["seats"].index("amber")]
            if record["match_id"] == match["id"]:
                found += 1
                assert tiles_in(line, hidden) == set()
        if len(records) < entrant_data.GAMES_PAGE:
            break
        after = f"?after={records[-1][0]['match_id']}"
    assert found == 1  # the check above ran on the match


def test_a_tournament_entrant_reads_nothing_of_another_bot(
        arena: WebArena, tournament: Tournament) -> None:
    t = tournament
    alpha = signed_in(arena, web_key(arena, t.id, "alpha"))
    status, home = alpha.get("/me")
    assert status == 200
    listed = dict(re.findall(r'data-match="([^"]+)" data-bot-match="([^"]+)"', home))
    # the ids its bot logged: the opaque ones, not the stored ones
    assert listed == {t.first: t.wire_id(t.first), t.second: t.wire_id(t.second)}
    hidden = unseen_tiles(t.logs[t.first], 0)
    assert hidden
    secrets = [output_marker("beta", t.first), output_marker("beta", t.others),
               output_marker("gamma", t.others), str(DEAL_SEED), str(OTHER_SEED)]
    for path in (f"/me/matches/{t.first}", f"/me/matches/{t.wire_id(t.first)}",
                 f"/me/matches/{t.first}?seat=1", f"/me/matches/{t.first}?bot=beta",
                 f"/me/matches/{quote(t.first)}%3Fseat%3D1"):
        status, text = alpha.get(path)
        if path.endswith("%3D1"):  # the whole string as an id: no such match
            assert status == 404
            continue
        assert status == 200, path
        assert output_marker("alpha", t.first) in text, path
        assert 'data-revealed="false"' in text
        for secret in secrets:
            assert secret not in text, (path, secret)
        assert tiles_in(without_csrf(text), hidden) == set(), path
    # matches it did not play, made-up ids, and the other rotation (not stored yet)
    for given in (t.others, t.wire_id(t.others, OTHER_SEED), "T999-g0-r0",
                  "0123456789abcdef", quote("../matches/" + t.others, safe="")):
        status, text = alpha.get(f"/me/matches/{given}")
        assert status == 404, given
        for secret in secrets:
            assert secret not in text
    status, text = alpha.get(f"/me/matches/{t.second}")
    assert status == 200 and "No game log stored" in text and str(DEAL_SEED) not in text
    for path in ("/me/games.jsonl", "/me/games.jsonl?bot=beta", "/me/games.jsonl?seat=1"):
        status, lines = alpha.get(path)
        assert status == 200
        records = [json.loads(line) for line in lines.splitlines()]
        assert [r["match_id"] for r in records] == [t.first]
        assert records[0]["seed"] is None and records[0]["bot_match_id"] == t.wire_id(t.first)
        assert [v["seat"] for v in records[0]["views"]] == [0]
        for secret in secrets:
            assert secret not in lines
        assert tiles_in(lines, hidden) == set()
    # rotation 2 played: the deal is over everywhere, its seed may be shown
    with open_database(arena.db) as db:
        play(db, t.second, "g0-r1", t.id, DEAL_SEED, ["beta", "alpha"])
    status, text = alpha.get(f"/me/matches/{t.first}")
    assert 'data-revealed="true"' in text and str(DEAL_SEED) in text
    assert output_marker("beta", t.first) not in text  # the other seat's output: never
    status, text = alpha.get(f"/me/matches/{t.second}")  # seat 1 now
    assert 'class="turns" data-seat="1"' in text and 'class="turns" data-seat="0"' not in text
    assert output_marker("alpha", t.second) in text
    assert output_marker("beta", t.second) not in text
    records = [json.loads(x) for x in alpha.get("/me/games.jsonl")[1].splitlines()]
    assert [(r["match_id"], r["seed"]) for r in records] == [
        (t.first, str(DEAL_SEED)), (t.second, str(DEAL_SEED))]


def _forged(cookie: str, bot_id: int) -> str:
    """`cookie` (itsdangerous: payload.timestamp.signature) with its payload's bot id
    replaced, the signature kept."""
    compressed = cookie.startswith(".")
    payload, timestamp, signature = cookie.lstrip(".").split(".")
    raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    data = json.loads(zlib.decompress(raw) if compressed else raw)
    data["bot"] = bot_id
    text = json.dumps(data, separators=(",", ":")).encode()
    new = base64.urlsafe_b64encode(text).decode().rstrip("=")
    return f"{new}.{timestamp}.{signature}"


def test_wrong_rotated_and_forged_credentials_are_refused(
        arena: WebArena, tournament: Tournament) -> None:
    t = tournament
    stranger = Visitor(arena.http_port)
    for token in ("", "not-a-token", "x" * 5000, arena.tokens["amber"] + "x", ADMIN_TOKEN):
        status, _headers, text = stranger.send(
            "POST", "/me/sign-in", {"csrf": stranger.csrf(), "token": token})
        assert status in (401, 413), token[:20]
        assert "cfarena_entrant" not in stranger.cookies
    for path in ("/me", f"/me/matches/{t.first}"):
        status, headers, _text = stranger.send("GET", path)
        assert status == 303 and headers["location"] == "/me/sign-in"
    assert stranger.get("/me/games.jsonl")[0] == 401
    key = web_key(arena, t.id, "alpha")
    alpha = signed_in(arena, key)
    assert alpha.get("/me/games.jsonl")[0] == 200
    # another bot's id in a genuine cookie, a made-up cookie: no session
    with open_database(arena.db) as db:
        beta_id = db.tournament_bots(t.id)
    beta = next(i for i, n in beta_id.items() if n == "beta")
    for cookie in (_forged(alpha.cookies["cfarena_entrant"], beta), "garbage.cookie.x"):
        forger = Visitor(arena.http_port, {"cfarena_entrant": cookie})
        assert forger.get("/me")[0] == 303
        status, text = forger.get(f"/me/matches/{t.others}")
        assert status == 303 and output_marker("beta", t.others) not in text
    # the key rotated: the session made with the old one ends, the old key admits nothing
    new_key = web_key(arena, t.id, "alpha")
    status, headers, _text = alpha.send("GET", "/me")
    assert status == 303 and headers["location"] == "/me/sign-in"
    assert alpha.get("/me/games.jsonl")[0] == 401
    assert Visitor(arena.http_port).sign_in(key) == 401
    assert signed_in(arena, new_key).get("/me")[0] == 200
    # a rotated ladder token ends its sessions too (the bot itself is cut off: stopped)
    arena.stop("basil")
    basil = signed_in(arena, arena.tokens["basil"])
    rotated = arena.post("/api/admin/bots/basil/rotate")
    assert rotated.status == 200
    assert basil.get("/me")[0] == 303
    basil = signed_in(arena, rotated.json()["token"])
    assert arena.post("/api/admin/bots/basil/revoke").status == 200  # and revoked: ended
    assert basil.get("/me")[0] == 303
    assert Visitor(arena.http_port).sign_in(rotated.json()["token"]) == 401


def test_sign_in_and_out_only_from_the_arenas_own_page(
        arena: WebArena, tournament: Tournament) -> None:
    key = web_key(arena, tournament.id, "alpha")
    visitor = Visitor(arena.http_port)
    csrf = visitor.csrf()
    status, headers, _text = visitor.send("GET", "/me/sign-in")
    cookie = next(v for k, v in headers.items() if k == "set-cookie")
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    # no form token, a wrong one, no cookie, another site's Origin: refused
    assert visitor.send("POST", "/me/sign-in", {"token": key})[0] == 403
    assert visitor.send("POST", "/me/sign-in", {"token": key, "csrf": csrf + "x"})[0] == 403
    assert Visitor(arena.http_port).send("POST", "/me/sign-in",
                                         {"token": key, "csrf": csrf})[0] == 403
    assert visitor.send("POST", "/me/sign-in", {"token": key, "csrf": csrf},
                        {"Origin": "http://evil.example"})[0] == 403
    assert "cfarena_entrant" not in visitor.cookies
    status, headers, _text = visitor.send("POST", "/me/sign-in", {"token": key, "csrf": csrf},
                                          {"Origin": f"http://127.0.0.1:{arena.http_port}"})
    assert status == 303
    session = headers["set-cookie"].lower()
    assert all(flag in session for flag in ("httponly", "samesite=strict", "path=/me"))
    # sign-out: not from another site's form, then from the page's
    assert visitor.send("POST", "/me/sign-out", {})[0] == 403
    assert visitor.send("POST", "/me/sign-out", {"csrf": csrf},
                        {"Origin": "http://evil.example"})[0] == 403
    assert visitor.get("/me")[0] == 200
    status, headers, _text = visitor.send("POST", "/me/sign-out", {"csrf": csrf})
    assert status == 303 and headers["location"] == "/me/sign-in"
    assert "cfarena_entrant" not in visitor.cookies
    assert visitor.send("GET", "/me")[0] == 303
