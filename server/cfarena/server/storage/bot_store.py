"""Bots in storage: registering one (the only way a bot is added), finding one by name
or token, revoking and rotating its token. A token is kept only as its hash
(`credentials.hash_token`), and every hash is checked here (`_checked`).

A bot is a ladder bot (`cfarena bots add`, it dials in to `serve`) or one tournament's
entrant (`register_entrants`: the tournament starts its processes and admits them with
one-time passes). Names, tokens and every call here but `register_entrants`,
`tournament_bots` and `bot_names` are the ladder's: an entrant named like a ladder bot
is another record, which no ladder call finds.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from cfarena.server.storage.connect import StorageError
from cfarena.server.storage.encoding import utc_now
from cfarena.server.storage.models import Bot
from cfarena.server.storage.queries import bot_info
from cfarena.server.storage.sessions import Sessions
from cfarena.server.storage.upsert import insert_or_ignore
from cfarena.server.storage.values import BotInfo

_HASH = re.compile(r"[0-9a-f]{64}")
_LADDER = Bot.tournament_id.is_(None)  # a ladder bot, not a tournament's entrant


@dataclass(frozen=True, slots=True)
class Registration:
    """A registered bot's id, and whether this registration added it."""

    bot_id: int
    added: bool


class BotNameTaken(StorageError):
    """The name is registered with another token."""


class BotStore(Sessions):
    """The bots' calls of `Database` (see the module docstring)."""

    def register_bot(self, name: str, token_hash: str, command: str | None = None
                     ) -> Registration:
        """Register ladder bot `name` with a token (its hash), or find it registered.

        Registering it again with the same token changes nothing but a given `command`
        (which replaces the stored one); with another token it is `BotNameTaken`.
        Processes registering one name at once all get the one bot: the name's row is
        inserted if missing (a concurrent writer's wins), then read. A token hash is
        one bot's: another bot's is a `StorageError`.
        """
        token_hash = _checked(token_hash)
        with self._session(write=True) as s:
            # on any conflict, not only the name's: a concurrent registration of the
            # same name and token would otherwise fail on the token hash's index
            added = insert_or_ignore(s, Bot, [{"name": name, "token_hash": token_hash,
                                               "command": command, "created_at": utc_now()}]
                                     ) == 1
            bot = s.scalars(select(Bot).where(Bot.name == name, _LADDER)).one_or_none()
            if bot is None:  # the hash is taken, by another name
                raise StorageError(f"cannot register bot {name!r}: its token is another "
                                   "bot's (one token, one bot)")
            if bot.token_hash != token_hash:
                raise BotNameTaken(f"bot {name!r} already exists (registered with a "
                                   "different token)")
            if command is not None:
                bot.command = command
            s.flush()
            return Registration(bot.id, added)

    def register_entrants(self, tournament_id: int, commands: Mapping[str, str]
                          ) -> dict[str, int]:
        """Name -> id of tournament `tournament_id`'s entrants, each registered on first
        use with its command (the one stored first stays: a tournament's identity holds
        its bots' commands). An entrant's stored token is a random hash nobody holds:
        its processes are admitted with one-time passes. Concurrent callers (a run and
        its workers) get the same records."""
        with self._session(write=True) as s:
            insert_or_ignore(s, Bot, [
                {"name": name, "token_hash": secrets.token_hex(32), "command": command,
                 "created_at": utc_now(), "tournament_id": tournament_id}
                for name, command in commands.items()])
            found = dict(s.execute(select(Bot.name, Bot.id).where(
                Bot.tournament_id == tournament_id, Bot.name.in_(list(commands)))).all())
            return {name: found[name] for name in commands}

    def tournament_bots(self, tournament_id: int) -> dict[int, str]:
        """Id -> name of tournament `tournament_id`'s entrants."""
        with self._session() as s:
            return dict(s.execute(select(Bot.id, Bot.name)
                                  .where(Bot.tournament_id == tournament_id)).all())

    def entered_tournaments(self, name: str) -> list[int]:
        """The tournaments with an entrant called `name`, by id."""
        with self._session() as s:
            return list(s.scalars(select(Bot.tournament_id).where(
                Bot.name == name, Bot.tournament_id.is_not(None)).order_by(Bot.tournament_id)))

    def bot_names(self) -> dict[int, str]:
        """Id -> name of every bot, ladder bots and tournaments' entrants alike (what
        labels a table of bot ids)."""
        with self._session() as s:
            return dict(s.execute(select(Bot.id, Bot.name)).all())

    def bot_by_name(self, name: str) -> BotInfo | None:
        """Ladder bot `name` (None: no such bot)."""
        with self._session() as s:
            bot = s.scalars(select(Bot).where(Bot.name == name, _LADDER)).one_or_none()
            return None if bot is None else bot_info(bot)

    def bot_by_token_hash(self, token_hash: str) -> BotInfo | None:
        """The ladder bot this token hash admits (None: unknown, or the bot is revoked)."""
        with self._session() as s:
            bot = s.scalars(select(Bot).where(Bot.token_hash == token_hash, _LADDER,
                                              Bot.revoked_at.is_(None))).one_or_none()
            return None if bot is None else bot_info(bot)

    def entrant_by_token_hash(self, token_hash: str) -> BotInfo | None:
        """The bot, a ladder bot or a tournament's entrant, whose token has this hash
        and is not revoked (a tournament entrant's token is its web key: its processes
        are admitted with one-time passes). None: no such bot."""
        with self._session() as s:
            bot = s.scalars(select(Bot).where(Bot.token_hash == token_hash,
                                              Bot.revoked_at.is_(None))).one_or_none()
            return None if bot is None else bot_info(bot)

    def bot_by_id(self, bot_id: int) -> BotInfo | None:
        """Bot `bot_id`, a ladder bot or a tournament's entrant (None: no such bot)."""
        with self._session() as s:
            bot = s.get(Bot, bot_id)
            return None if bot is None else bot_info(bot)

    def list_bots(self) -> list[BotInfo]:
        """The ladder bots, by name."""
        with self._session() as s:
            return [bot_info(b) for b in s.scalars(select(Bot).where(_LADDER)
                                                   .order_by(Bot.name))]

    def revoke_bot(self, name: str) -> BotInfo:
        """Revoke bot `name`'s token: it admits no new connection, and a running arena
        closes the live ones (it polls `active_tokens`). `StorageError` if no such bot."""
        with self._session(write=True) as s:
            bot = bot_named(s, name)
            if bot.revoked_at is None:
                bot.revoked_at = utc_now()
            s.flush()
            return bot_info(bot)

    def rotate_token(self, name: str, token_hash: str, tournament_id: int | None = None
                     ) -> BotInfo:
        """Give bot `name` a new token (its hash): the old one admits nothing from now
        on (live connections made with it are closed by a running arena), and a
        revoked bot is admitted again with the new one. With `tournament_id`, that
        tournament's entrant `name`: the token is its web key (the entrant's pages),
        never its processes' admission."""
        token_hash = _checked(token_hash)
        with self._session(write=True) as s:
            bot = bot_named(s, name) if tournament_id is None else _entrant(
                s, tournament_id, name)
            bot.token_hash = token_hash
            bot.token_changed_at = utc_now()
            bot.revoked_at = None
            s.flush()
            return bot_info(bot)

    def active_tokens(self) -> dict[str, str]:
        """Token hash -> bot name of every ladder bot not revoked."""
        with self._session() as s:
            rows = s.execute(select(Bot.token_hash, Bot.name).where(_LADDER,
                                                                    Bot.revoked_at.is_(None)))
            return {h: n for h, n in rows}


def bot_named(s: Session, name: str) -> Bot:
    """Ladder bot `name`'s row; `StorageError` if there is no such bot (saying which
    tournaments have an entrant of that name, whose tables are `--tournament ID`'s)."""
    bot = s.scalars(select(Bot).where(Bot.name == name, _LADDER)).one_or_none()
    if bot is not None:
        return bot
    entered = sorted(t for t in s.scalars(select(Bot.tournament_id).where(Bot.name == name))
                     if t is not None)
    if entered:
        raise StorageError(f"no ladder bot named {name!r}; tournament(s) "
                           f"{', '.join(map(str, entered))} have an entrant of that name: "
                           "see `cfarena standings --tournament ID`")
    raise StorageError(f"no bot named {name!r}")


def _entrant(s: Session, tournament_id: int, name: str) -> Bot:
    """Tournament `tournament_id`'s entrant `name`; `StorageError` if there is none."""
    bot = s.scalars(select(Bot).where(Bot.name == name, Bot.tournament_id == tournament_id)
                    ).one_or_none()
    if bot is None:
        raise StorageError(f"tournament {tournament_id} has no entrant named {name!r}")
    return bot


def _checked(token_hash: str) -> str:
    """`token_hash`, if it is a hash (ValueError if not: a raw token is never stored)."""
    if not _HASH.fullmatch(token_hash):
        raise ValueError("token_hash must be a sha256 hex digest (see hash_token)")
    return token_hash
