"""The tournament as storage knows it: found again (resume) or created and scheduled,
and locked while it is played.

A tournament is found again by the hash of its identity (`TournamentConfig.to_json`),
which holds the SHA-256 of the files its bots run: after a bot's file changes, the
same command plays a new tournament, and `files_note` says which bot's files changed.
A tournament stored before files were hashed has the identity without them: the same
command resumes it while it is unfinished; once finished it is not reported again
(what its bots ran is unknown), a new one is played. A bundled bot's settings (from the
organiser's environment) are part of the identity too: `files_note` says which changed.
"""

from __future__ import annotations

import contextlib
import secrets
from dataclasses import dataclass, replace

from cfarena.engine import Rules
from cfarena.server.storage import (
    Database,
    MatchPlan,
    ScheduledMatch,
    TournamentInfo,
    TournamentStatus,
    config_hash,
)
from cfarena.server.storage.locks import TournamentBusy, tournament_lock
from cfarena.server.tournament.config import (
    TournamentConfig,
    TournamentError,
    bot_files,
    host_defences,
    stored_settings,
)
from cfarena.server.tournament.pool import Launch
from cfarena.server.tournament.schedule import (
    PlannedMatch,
    group_of_key,
    group_phases,
    phases,
)

# the stored config's hash of the identity without the bots' files: what finds the
# tournament a changed bot file left behind (`files_note`)
_WITHOUT_FILES = "identity_without_files"


@dataclass(frozen=True, slots=True)
class NewTournament:
    """A tournament to create: its master seed and every match, computed once."""

    seed: int
    plan: list[PlannedMatch]

    @classmethod
    def of(cls, config: TournamentConfig) -> NewTournament:
        """Without --seed the master seed comes from the OS's CSPRNG (and is stored): no
        deal can be known before it is played."""
        seed = config.seed if config.seed is not None else secrets.randbits(62)
        return cls(seed, config.schedule(seed))


def plan_matches(config: TournamentConfig, bot_ids: dict[str, int],
                 plan: list[PlannedMatch]) -> list[MatchPlan]:
    options = config.rules.to_options()
    return [
        MatchPlan(
            key=m.key,
            seed=m.seed,
            rules=options,
            players=config.players,
            seat_bot_ids=[bot_ids[name] for name in m.seats],
        )
        for m in plan
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
    or not, else an unfinished one stored before files were hashed (or the one `--resume`
    names); None for a new one. Reads only."""
    identity = config_hash(config.to_json(launch))
    legacy = config_hash(config.to_json(launch, files=False))
    if resume_id is None:
        return (db.find_tournament(identity)
                or db.find_tournament(legacy, unfinished_only=True))
    existing = db.get_tournament(resume_id)
    if existing is None:
        raise TournamentError(f"no tournament {resume_id} to resume")
    if existing.config_hash not in (identity, legacy):
        changed = _changed_bots(existing, config) \
            if existing.config.get(_WITHOUT_FILES) == legacy else None
        settings = _changed_settings(existing, config, launch)
        raise TournamentError(
            f"tournament {resume_id} was run with a different configuration"
            + (f" (the files of {changed} changed)" if changed else "")
            + (f" ({settings}: set it as then)" if settings else "")
            + "; resume it with the same options (see `cfarena tournaments`)")
    return existing


def files_note(config: TournamentConfig, db: Database, launch: Launch) -> str | None:
    """One line when the same command would play a tournament stored before, were it not
    for its bots' files (changed since, or not recorded then) or a bundled bot's settings
    (alone): which, and that a new tournament starts; None otherwise. Reads only."""
    if find_tournament(config, db, None, launch) is not None:
        return None
    legacy = config_hash(config.to_json(launch, files=False))
    for t in reversed(db.list_tournaments()):
        settings = _changed_settings(t, config, launch)
        if settings:
            return (f"{settings} since tournament #{t.id}: a new tournament starts "
                    f"(`--resume {t.id}` is refused)")
        if t.config.get(_WITHOUT_FILES) == legacy:
            return (f"the files of {_changed_bots(t, config)} changed since tournament "
                    f"#{t.id}: a new tournament starts (`--resume {t.id}` is refused)")
        if t.config_hash == legacy and legacy != config_hash(config.to_json(launch)):
            return (f"tournament #{t.id} is finished and was stored before bots' files "
                    "were recorded: a new tournament starts")
    return None


def _changed_bots(stored: TournamentInfo, config: TournamentConfig) -> str:
    """"bot a (a.py), bot b (b.py)": the bots whose files differ from the stored ones."""
    before = {str(b.get("name")): b.get("files") or {} for b in stored.config.get("bots", [])}
    changed = []
    for bot in config.bots:
        old, new = before.get(bot.name, {}), dict(bot.files)
        if old != new:
            names = sorted(n for n in {*old, *new} if old.get(n) != new.get(n))
            changed.append(f"bot {bot.name} ({', '.join(names)})")
    return ", ".join(changed) or "its bots"


def _changed_settings(stored: TournamentInfo, config: TournamentConfig,
                      launch: Launch) -> str | None:
    """"montecarlo's CFARENA_MC_BUDGET_MS changed (200 -> unset)" when `stored` is this
    tournament but for its bundled bots' settings (`BotSpec.settings`, which come from
    the organiser's environment); None otherwise."""
    # (a stored entry that cannot be read, or settings for a bot of that name that is
    # not bundled now, which `BotSpec` refuses: not this tournament, nothing to say)
    try:
        before = {str(b["name"]): stored_settings(b.get("settings"))
                  for b in stored.config.get("bots", [])}
        then = replace(config, bots=tuple(
            replace(b, settings=before.get(b.name, ())) if b.bundled else b
            for b in config.bots))
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    if then == config or config_hash(then.to_json(launch)) != stored.config_hash:
        return None
    changes = []
    for bot, old in zip(config.bots, then.bots, strict=True):
        was, now = dict(old.settings), dict(bot.settings)
        changes += [f"{bot.name}'s {key} changed ({was.get(key, 'unset')} -> "
                    f"{now.get(key, 'unset')})"
                    for key in sorted({*was, *now}) if was.get(key) != now.get(key)]
    return ", ".join(changes)


def local_files_problem(config: TournamentConfig) -> str | None:
    """Why this machine cannot play a stored tournament's matches (`stored_config`): a
    bot whose files here differ from those recorded when it was created (a worker on
    another machine would play another bot under its name); None if they match, or
    none were recorded."""
    differ = []
    for bot in config.bots:
        if not bot.files:
            continue
        recorded, here = dict(bot.files), dict(bot_files(bot))
        if recorded != here:
            names = sorted(n for n in {*recorded, *here} if recorded.get(n) != here.get(n))
            differ.append(f"bot {bot.name} ({', '.join(names)})")
    if not differ:
        return None
    return (f"the files of {', '.join(differ)} on this machine differ from those the "
            "tournament was created with: copy the same files here")


def reopen_tournament(db: Database, tournament_id: int) -> list[ScheduledMatch]:
    """Mark a tournament found again running; its pending matches."""
    db.set_tournament_status(tournament_id, TournamentStatus.RUNNING)
    return db.pending_matches(tournament_id)


def create_tournament(config: TournamentConfig, db: Database, launch: Launch,
                      new: NewTournament) -> tuple[int, list[ScheduledMatch]]:
    """Store a new tournament with its schedule; its id and pending matches."""
    problem = config.seats_problem()
    if problem is not None:
        raise TournamentError(problem)
    identity = config.to_json(launch)
    kind = f"gauntlet of {config.gauntlet}" if config.gauntlet else "round-robin"
    name = config.name or f"{_rules_label(config.rules)} {config.players}p {kind}"
    # `defences`: what the machines playing it gave (each one that did not give one
    # sets it false: TournamentPlayer); `seats_per_bot`: what the organiser allowed
    stored = {**identity, "seed": new.seed, "seed_fixed": config.seed is not None,
              "seats_per_bot": config.seats_per_bot, "defences": host_defences(launch),
              _WITHOUT_FILES: config_hash(config.to_json(launch, files=False))}
    tournament_id = db.create_tournament(name, stored, identity=identity)
    db.schedule_matches(tournament_id,
                        plan_matches(config, entrant_ids(db, tournament_id, config), new.plan))
    return tournament_id, db.pending_matches(tournament_id)


def match_phases(db: Database, tournament_id: int) -> dict[str, int]:
    """The phase of each of the tournament's matches (by key), from all its stored
    matches, played or not (`schedule.phases`; a bot test's: `schedule.group_phases`,
    by the batches stored with it)."""
    matches = db.list_matches(tournament_id, limit=None)
    test = db.sprt_test_of(tournament_id)
    if test is not None:  # (a test stored before batches: one group a batch)
        keys = [m.key for m in matches]
        batch = test.config.get("batch") or {"groups": 1, "matches_per_group": 1 + max(
            (group_of_key(key)[1] for key in keys), default=0)}
        return group_phases(keys, int(batch["groups"]), int(batch["matches_per_group"]))
    return phases((m.key, m.seed, tuple(s.bot_id for s in sorted(m.seats, key=lambda s: s.seat)))
                  for m in matches)


def _rules_label(rules: Rules) -> str:
    """The preset and the options that differ from it: "standard spokes=4 rounds=half"."""
    preset = Rules.preset(rules.name).to_options()
    changed = [f"{key}={value}" for key, value in rules.to_options().items()
               if key != "preset" and preset.get(key) != value]
    return " ".join([rules.name, *changed])


def entrant_ids(db: Database, tournament_id: int, config: TournamentConfig) -> dict[str, int]:
    """Name -> id of the tournament's entrants, its own records (registered on first
    use): a ladder bot of the same name is another bot, whose token, versions and
    ratings the tournament never touches."""
    return db.register_entrants(tournament_id, {bot.name: bot.describe() for bot in config.bots})
