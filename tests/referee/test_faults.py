"""A misbehaving bot gets the documented outcome; the others' matches complete."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from cfarena.engine import Rules
from cfarena.match.log_format import record_to_log
from cfarena.server.referee import FaultKind, MatchRecord, TimeControl
from cfarena.server.replay.verify import verify_log

from .harness import table

SHORT = Rules.preset("standard").with_options(rounds=2)
GOOD = ["g1", "g2", "g3", "g4", "g5", "g6", "g7"]


async def _fault_case(
    tmp: Path, mode: str, tc: TimeControl
) -> tuple[MatchRecord, MatchRecord, str]:
    """Match A: `bad` (seat 1) + 3 good bots; match B: 4 good bots, concurrently."""
    async with table(tmp, ["bad", *GOOD]) as t:
        bad = t.raw("bad", mode, "--after", "2")
        for name in GOOD:
            t.raw(name, "good")
        await t.server.wait_for_bots(["bad", *GOOD], timeout=30)
        a, b = await asyncio.gather(
            t.server.run_match("A", SHORT, 11, ["g1", "bad", "g2", "g3"], tc),
            t.server.run_match("B", SHORT, 12, ["g4", "g5", "g6", "g7"], tc),
        )
        # the referee keeps serving: one more match among good bots (a fresh pair of matches)
        c = await t.server.run_match("C", SHORT, 13, ["g1", "g2", "g4", "g5"], tc)
        assert c.status == "finished" and not c.faults
        # what the bad bot was told arrives on its own schedule: give it time
        marker = _MARKERS.get(mode)
        for _ in range(200):
            if marker is None or marker in t.output(bad):
                break
            await asyncio.sleep(0.05)
        return a, b, t.output(bad)


_MARKERS = {"garbage": "STATUS", "oversized": "STATUS", "disconnect": "DISCONNECTED"}


def _check(a: MatchRecord, b: MatchRecord, kind: FaultKind) -> None:
    assert a.status == "finished", a.reason
    assert [f.kind for f in a.faults] == [kind]
    fault = a.faults[0]
    assert fault.seat == 1 and fault.forfeit
    assert a.forfeited == [1]
    assert a.ranks[1] == max(a.ranks) and a.ranks.count(a.ranks[1]) == 1
    # the seat was played out by the fallback after the fault
    after = [x for x in a.actions if x.seat == 1 and x.decided]
    assert after and after[-1].fallback
    assert not verify_log(record_to_log(a)), verify_log(record_to_log(a))
    assert b.status == "finished" and not b.faults and not b.forfeited


def test_hanging_bot_times_out(tmp_path: Path) -> None:
    a, b, _ = asyncio.run(_fault_case(tmp_path, "hang", TimeControl(move_timeout_ms=600)))
    _check(a, b, FaultKind.TIMEOUT)
    assert "600 ms" in a.faults[0].detail


def test_crashing_bot_is_a_disconnect(tmp_path: Path) -> None:
    a, b, _ = asyncio.run(_fault_case(tmp_path, "crash", TimeControl(move_timeout_ms=5000)))
    _check(a, b, FaultKind.DISCONNECT)


def test_garbage_is_a_protocol_fault(tmp_path: Path) -> None:
    a, b, out = asyncio.run(_fault_case(tmp_path, "garbage", TimeControl(move_timeout_ms=5000)))
    _check(a, b, FaultKind.PROTOCOL)
    assert "malformed" in a.faults[0].detail
    assert "STATUS INVALID_ARGUMENT" in out


def test_illegal_answer_is_an_illegal_fault(tmp_path: Path) -> None:
    a, b, _ = asyncio.run(_fault_case(tmp_path, "illegal", TimeControl(move_timeout_ms=5000)))
    _check(a, b, FaultKind.ILLEGAL)
    assert "not offered" in a.faults[0].detail


def test_disconnect_mid_match(tmp_path: Path) -> None:
    a, b, out = asyncio.run(_fault_case(tmp_path, "disconnect", TimeControl(move_timeout_ms=5000)))
    _check(a, b, FaultKind.DISCONNECT)
    assert "DISCONNECTED" in out


def test_oversized_message_is_refused(tmp_path: Path) -> None:
    """A message over the referee's 64 KiB limit is a protocol fault that says so;
    the bot's stream ends with RESOURCE_EXHAUSTED and the same words."""
    a, b, out = asyncio.run(_fault_case(tmp_path, "oversized", TimeControl(move_timeout_ms=5000)))
    _check(a, b, FaultKind.PROTOCOL)
    detail = a.faults[0].detail
    assert re.fullmatch(r"message of 2000\d\d bytes over the 65536-byte limit", detail), detail
    assert record_to_log(a)["faults"][0]["detail"] == detail  # what is stored
    assert "STATUS RESOURCE_EXHAUSTED" in out and detail in out
    # the fault is at the seat's first unanswered Turn: its own third (--after 2)
    assert a.faults[0].turn_id == 3


def test_stale_and_repeated_answers_are_ignored_with_a_notice(tmp_path: Path) -> None:
    """A wrong turn_id or a second answer is not a fault: each is ignored with a Notice."""
    async def go() -> tuple[MatchRecord, int, str]:
        names = ["noisy", "g1", "g2", "g3"]
        async with table(tmp_path, names) as t:
            noisy = t.raw("noisy", "noisy")
            for name in names[1:]:
                t.raw(name, "good")
            await t.server.wait_for_bots(names, timeout=30)
            a = await t.server.run_match("A", SHORT, 31, names, TimeControl(5000))
            decided = sum(1 for x in a.actions if x.seat == 0 and x.decided)
            # two ignored Actions per Turn; the last notices may trail the MatchEnd
            for _ in range(200):
                if t.output(noisy).count("NOTICE ignored:") >= 2 * decided:
                    break
                await asyncio.sleep(0.05)
            return a, decided, t.output(noisy)

    a, decided, out = asyncio.run(go())
    assert a.status == "finished" and not a.faults and not a.forfeited
    assert decided and not any(x.fallback for x in a.actions)
    # one wrong turn_id per Turn; each second answer finds no Turn waiting (or,
    # if the next Turn is already out, a turn_id that is not the waiting one)
    assert len(re.findall(r"NOTICE ignored: turn_id 1\d{3} is not the pending", out)) == decided
    assert out.count("NOTICE ignored:") == 2 * decided
    assert "no turn of match 'A' is waiting for an answer" in out
    assert not verify_log(record_to_log(a))


def test_strikes_cost_only_the_turn(tmp_path: Path) -> None:
    # 1000 strikes: every illegal answer only costs that turn, the bot is never forfeited
    tc = TimeControl(move_timeout_ms=5000, strikes=1000)
    a, b, _ = asyncio.run(_fault_case(tmp_path, "illegal", tc))
    assert b.status == "finished" and not b.faults
    assert a.status == "finished" and not a.forfeited
    assert a.faults and all(f.kind is FaultKind.ILLEGAL and not f.forfeit for f in a.faults)
    assert not verify_log(record_to_log(a))


def test_wrong_token_is_unauthenticated(tmp_path: Path) -> None:
    async def go() -> str:
        async with table(tmp_path, ["intruder"]) as t:
            proc = t.raw("intruder", "wrong_token")
            for _ in range(200):
                if proc.poll() is not None:
                    break
                await asyncio.sleep(0.05)
            assert t.server.connection_count("intruder") == 0
            return t.output(proc)

    out = str(asyncio.run(go()))
    assert "STATUS UNAUTHENTICATED" in out


def test_answer_for_another_match_is_ignored(tmp_path: Path) -> None:
    async def go() -> tuple[MatchRecord, MatchRecord, str]:
        names = ["rogue", *GOOD]
        async with table(tmp_path, names) as t:
            rogue = t.raw("rogue", "other_match", "--other", "B")
            for name in GOOD:
                t.raw(name, "good")
            await t.server.wait_for_bots(names, timeout=30)
            tc = TimeControl(move_timeout_ms=5000)
            a, b = await asyncio.gather(
                t.server.run_match("A", SHORT, 21, ["rogue", "g1", "g2", "g3"], tc),
                t.server.run_match("B", SHORT, 22, ["g4", "g5", "g6", "g7"], tc),
            )
            await asyncio.sleep(0.2)
            return a, b, t.output(rogue)

    a, b, out = asyncio.run(go())
    assert a.status == b.status == "finished"
    assert not a.faults and not b.faults
    assert "NOTICE ignored: you have no seat in match 'B'" in out
    assert not verify_log(record_to_log(b))


@pytest.mark.parametrize("preset", ["standard", "maltese", "trains"])
def test_full_match_per_preset_with_sdk_bots(tmp_path: Path, preset: str) -> None:
    async def go() -> MatchRecord:
        names = ["r", "g", "raw"]
        async with table(tmp_path, names) as t:
            t.sdk("r", "cfarena.bots.random_bot")
            t.sdk("g", "cfarena.bots.greedy")
            t.raw("raw", "good")
            await t.server.wait_for_bots(names, timeout=60)
            return await t.server.run_match(
                f"full-{preset}", Rules.preset(preset), 5, names, TimeControl(2000)
            )

    rec = asyncio.run(go())
    assert rec.status == "finished" and not rec.faults
    resolved = Rules.preset(preset).resolve(3)
    assert len(rec.round_scores) == resolved.rounds
    assert sorted(rec.ranks)[0] == 1
    # turn ids count each seat's own Turns
    for seat in range(3):
        ids = [x.turn_id for x in rec.actions if x.seat == seat and x.decided]
        assert ids == list(range(1, len(ids) + 1)) and ids
    assert not verify_log(record_to_log(rec))


def test_shutdown_aborts_running_matches_and_hands_them_over(tmp_path: Path) -> None:
    stored: list[MatchRecord] = []

    async def go() -> None:
        names = ["h1", "h2"]
        async with table(tmp_path, names) as t:
            t.raw("h1", "hang", "--after", "0")
            t.raw("h2", "hang", "--after", "0")
            await t.server.wait_for_bots(names, timeout=30)
            task = asyncio.create_task(
                t.server.run_match("S", SHORT, 3, names, TimeControl(60_000),
                                   on_record=stored.append)
            )
            await asyncio.sleep(0.5)
            await t.server.stop(grace=0.2)
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(go())
    assert len(stored) == 1
    assert stored[0].status == "aborted" and "shutting down" in stored[0].reason
