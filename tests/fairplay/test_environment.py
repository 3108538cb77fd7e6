"""A bot reads its environment: it must hold the allow-list and nothing of the organiser's.

The organiser runs the tournament with a canary variable, a `CFARENA_DB`
carrying a password and a setting of the bundled montecarlo (which only that
bundled bot is given) in its environment. `bots/env_report.py` prints, at start
and once its match has begun, every key and value (its own credential hashed)
of `os.environ` and of `/proc/self/environ`, twice over: as a forked SDK bot
(`python -m cfarena.sdk run`, its fork server's start environment in
`/proc/self/environ`) and as a fresh process (a script run on the arena's
Python). What must hold: exactly the allow-listed keys (FAIRPLAY.md), with the
values the arena sets, and PWD where a process was started by bwrap (which sets
it to the working directory it gives the sandbox: what getcwd() shows anyway);
neither secret anywhere in any seat's stored output or in the log directory.
"""

from __future__ import annotations

from typing import Any

from tests.fairplay.arena import (
    DB_PASSWORD,
    ORGANISER_CANARY,
    Arena,
    Outcome,
    Seat,
    assert_fair_run,
)

SCENARIOS = ("environment",)

ALLOWED = {"CFARENA_SERVER", "CFARENA_TOKEN", "CFARENA_CAPACITY", "PATH", "HOME", "LANG",
           "PYTHONUNBUFFERED"}
SET_BY_THE_ARENA = {"CFARENA_SERVER": "unix:/run/cfarena/arena.sock", "CFARENA_CAPACITY": "1",
                    "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"}


def _outcome(arena: Arena) -> Outcome:
    outcome = arena.outcome("environment")
    assert_fair_run(outcome, arena)
    return outcome


def _reports(seat: Seat) -> list[dict[str, Any]]:
    return [seat.one("environment", phase=phase) for phase in ("start", "match")]


def _check_values(seen: dict[str, str]) -> None:
    for key, value in SET_BY_THE_ARENA.items():
        assert seen.get(key, value) == value, (key, seen)
    if "CFARENA_TOKEN" in seen:
        assert seen["CFARENA_TOKEN"].startswith("sha256:"), seen  # hashed by the bot


def test_a_fresh_process_gets_the_allow_list_only(arena: Arena) -> None:
    outcome = _outcome(arena)
    seats = outcome.seats("fresh")
    assert len(seats) == 2
    for seat in seats:
        for report in _reports(seat):
            assert set(report["os_environ"]) == ALLOWED | {"PWD"}, report
            assert report["os_environ"] == report["proc_environ"], report  # as started
            assert report["os_environ"]["PWD"] == str(outcome.tmp), report
            _check_values(report["os_environ"])


def test_a_forked_process_and_its_fork_server_get_the_allow_list_only(arena: Arena) -> None:
    outcome = _outcome(arena)
    seats = outcome.seats("forked")
    assert len(seats) == 2
    for seat in seats:
        for report in _reports(seat):
            assert set(report["os_environ"]) == ALLOWED, report
            # the fork server's start environment: no credential, its control socket's fd
            assert set(report["proc_environ"]) == ALLOWED - {"CFARENA_TOKEN"} | {
                "CFARENA_FORK_FD", "PWD"}, report
            assert report["proc_environ"]["PWD"] == str(outcome.tmp), report
            _check_values(report["os_environ"])
            _check_values(report["proc_environ"])


def test_no_secret_of_the_organiser_reaches_a_bot(arena: Arena) -> None:
    outcome = _outcome(arena)
    logged = [p.read_text(errors="replace") for p in outcome.log_dir.rglob("*") if p.is_file()]
    assert logged, "no bot output in the log directory"
    stored = [seat.log.output for name in ("forked", "fresh") for seat in outcome.seats(name)
              if seat.log is not None]
    assert len(stored) == 4
    assert all("PROBE environment: " in text for text in stored)
    for text in stored + logged:
        assert ORGANISER_CANARY not in text
        assert DB_PASSWORD not in text
