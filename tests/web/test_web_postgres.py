"""The web page on PostgreSQL: `cfarena serve` on a real PostgreSQL database with the
web page (and no admin token: admin actions are refused with 403)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from tests.harness.postgres import PgCluster
from tests.web.arena import board_full, by_id, elements, response_schema, web_arena


@pytest.mark.postgres
def test_web_page_on_postgresql(pg_cluster: PgCluster, tmp_path: Path) -> None:
    db = pg_cluster.create_database("web_pages")
    bots = {"amber": "greedy", "coral": "random", "flint": "smart", "slate": "greedy"}
    with web_arena(tmp_path, db, bots, admin=False) as arena:
        arena.wait("a finished match on the leaderboard", lambda: board_full(arena.get(
            "/api/leaderboard").json(), len(bots)), 40)
        openapi = arena.get("/openapi.json").json()
        board = arena.get("/api/leaderboard")
        jsonschema.validate(board.json(), response_schema(openapi, "/api/leaderboard", 200),
                            cls=jsonschema.Draft202012Validator)
        assert {r["bot"] for r in board.json()["rows"]} == set(bots)
        html = arena.get("/").text
        assert {a["data-bot"] for t, a in elements(html) if t == "tr" and "data-bot" in a} \
            == set(bots)
        match = arena.get("/api/matches?status=finished&limit=1").json()[0]
        detail = arena.get(f"/api/matches/{match['id']}")
        jsonschema.validate(detail.json(),
                            response_schema(openapi, "/api/matches/{match_id}", 200),
                            cls=jsonschema.Draft202012Validator)
        assert detail.json()["revealed"] is True
        page = arena.get(f"/matches/{match['id']}").text
        assert by_id(page, "replay")[0] == "iframe"
        assert arena.get(f"/matches/{match['id']}/replay").status == 200
        assert by_id(arena.get("/bots/flint").text, "rating-chart")[0] == "div"
        # no admin token configured: every admin action is refused, whatever is sent
        for token in (None, "anything-at-all-0123456789"):
            reply = arena.post("/api/admin/ladder/pause", token=token)
            assert reply.status == 403
            assert reply.json() == {"detail": "no admin token configured"}
        assert arena.post("/api/admin/bots", {"name": "x"}).status == 403
        # stopping with viewers connected: their streams end, serve stops cleanly
        streams = [arena.sse("/api/events"), arena.sse(f"/api/matches/{match['id']}/live")]
        arena.wait("the streams open", lambda: all(s.status == 200 for s in streams), 10)
        arena.stop("serve")
        assert all(s.done.wait(5) for s in streams)
        assert "Traceback" not in arena.err() and "ERROR" not in arena.err()
