"""The tournament as storage knows it: found again (resume) or created and scheduled,
locked while it is played, and its leader for the progress line."""

from __future__ import annotations

import contextlib
import secrets

from cfarena.engine import Rules
from cfarena.server.referee import new_token
from cfarena.server.storage import (
    Database,
    MatchPlan,
    ScheduledMatch,
    StorageError,
    TournamentInfo,
    TournamentStatus,
    config_hash,
    hash_token,
)
from cfarena.server.storage.locks import TournamentBusy, tournament_lock
from cfarena.server.tournament.config import TournamentConfig, TournamentError, host_defences
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.schedule import phases, round_robin


def plan_matches(config: TournamentConfig, bot_ids: dict[str, int], seed: int
                 ) -> list[MatchPlan]:
    options = config.rules.to_options()
    return [
        MatchPlan(
            key=m.key,
            seed=m.seed,
            rules=options,
            players=config.players,
            seat_bot_ids=[bot_ids[name] for name in m.seats],
        )
        for m in round_robin([b.name for b in config.bots], config.players, config.games, seed)
    ]

def lock_tournament(locks: contextlib.ExitStack, db: Database, tournament_id: int) -> None:
    """Hold the tournament's lock until the run ends; TournamentError if another has it."""
    try:
        locks.enter_context(tournament_lock(db.engine, tournament_id))
    except TournamentBusy as exc:
        raise TournamentError(str(exc)) from None


def find_tournament(config: TournamentConfig, db: Database, resume_id: int | None,
                     launch: Launch) -> TournamentInfo | None:
    """The tournament this configuration plays: the newest with the same identity, finished
    or not (or the one `--resume` names); None for a new one. Reads only."""
    identity = config_hash(config.to_json(launch))
    if resume_id is None:
        return db.find_tournament(identity)
    existing = db.get_tournament(resume_id)
    if existing is None:
        raise TournamentError(f"no tournament {resume_id} to resume")
    if existing.config_hash != identity:
        raise TournamentError(
            f"tournament {resume_id} was run with a different configuration; "
            "resume it with the same options (see `cfarena tournaments`)"
        )
    return existing


def open_tournament(config: TournamentConfig, db: Database, found: int | None,
                     launch: Launch) -> tuple[int, list[ScheduledMatch]]:
    """The tournament to play (found again, or created and scheduled) and its pending
    matches. Without --seed the master seed comes from the OS's CSPRNG and is stored:
    no deal can be known before it is played."""
    if found is not None:
        db.set_tournament_status(found, TournamentStatus.RUNNING)
        return found, db.pending_matches(found)
    problem = config.seats_problem()
    if problem is not None:
        raise TournamentError(problem)
    identity = config.to_json(launch)
    seed = config.seed if config.seed is not None else secrets.randbits(62)
    name = config.name or f"{_rules_label(config.rules)} {config.players}p round-robin"
    # `defences`: what the machines playing it gave (each one that did not give one
    # sets it false: TournamentPlayer); `seats_per_bot`: what the organiser allowed
    stored = {**identity, "seed": seed, "seed_fixed": config.seed is not None,
              "seats_per_bot": config.seats_per_bot, "defences": host_defences(launch)}
    tournament_id = db.create_tournament(name, stored, identity=identity)
    db.schedule_matches(tournament_id, plan_matches(config, bot_ids(db, config), seed))
    return tournament_id, db.pending_matches(tournament_id)


def match_phases(db: Database, tournament_id: int) -> dict[str, int]:
    """The phase of each of the tournament's matches (by key), from all its stored
    matches, played or not (`schedule.phases`)."""
    return phases((m.key, m.seed, tuple(s.bot_id for s in sorted(m.seats, key=lambda s: s.seat)))
                  for m in db.list_matches(tournament_id, limit=None))


def _rules_label(rules: Rules) -> str:
    """The preset and the options that differ from it: "standard spokes=4 rounds=half"."""
    preset = Rules.preset(rules.name).to_options()
    changed = [f"{key}={value}" for key, value in rules.to_options().items()
               if key != "preset" and preset.get(key) != value]
    return " ".join([rules.name, *changed])


def bot_ids(db: Database, config: TournamentConfig) -> dict[str, int]:
    """The bots' ids (registered on first use; their processes get one-time passes, so
    the stored token is a random one nobody holds)."""
    return {bot.name: db.register_bot(bot.name, hash_token(new_token()), bot.describe(),
                                      replace_token=True).bot_id
            for bot in config.bots}


def leader(db: Database, tournament_id: int) -> str | None:
    try:
        table = db.standings(tournament_id)
    except StorageError:  # the database is away: the progress line goes without
        return None
    return f"{table[0].name} ({table[0].elo:.0f})" if table else None
