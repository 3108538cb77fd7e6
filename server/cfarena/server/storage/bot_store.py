"""Bots in storage: registering one (the only way a bot is added), finding one by name
or token, revoking and rotating its token. A token is kept only as its hash
(`credentials.hash_token`), and every hash is checked here (`_checked`)."""

from __future__ import annotations

import re
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


@dataclass(frozen=True, slots=True)
class Registration:
    """A registered bot's id, and whether this registration added it."""

    bot_id: int
    added: bool


class BotNameTaken(StorageError):
    """The name is registered with another token."""


class BotStore(Sessions):
    """The bots' calls of `Database` (see the module docstring)."""

    def register_bot(self, name: str, token_hash: str, command: str | None = None, *,
                     replace_token: bool = False) -> Registration:
        """Register bot `name` with a token (its hash), or find it registered.

        Registering it again with the same token changes nothing but a given `command`
        (which replaces the stored one). With another token it is `BotNameTaken`, unless
        `replace_token`, for bots the arena starts itself: every `run-tournament` issues
        fresh tokens to the processes it starts, so the latest one is what counts.
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
            bot = s.scalars(select(Bot).where(Bot.name == name)).one_or_none()
            if bot is None:  # the hash is taken, by another name
                raise StorageError(f"cannot register bot {name!r}: its token is another "
                                   "bot's (one token, one bot)")
            if bot.token_hash != token_hash:
                if not replace_token:
                    raise BotNameTaken(f"bot {name!r} already exists (registered with a "
                                       "different token)")
                bot.token_hash = token_hash
            if command is not None:
                bot.command = command
            s.flush()
            return Registration(bot.id, added)

    def bot_by_name(self, name: str) -> BotInfo | None:
        """Bot `name` (None: no such bot)."""
        with self._session() as s:
            bot = s.scalars(select(Bot).where(Bot.name == name)).one_or_none()
            return None if bot is None else bot_info(bot)

    def bot_by_token_hash(self, token_hash: str) -> BotInfo | None:
        """The bot this token hash admits (None: unknown, or the bot is revoked)."""
        with self._session() as s:
            bot = s.scalars(select(Bot).where(Bot.token_hash == token_hash,
                                              Bot.revoked_at.is_(None))).one_or_none()
            return None if bot is None else bot_info(bot)

    def list_bots(self) -> list[BotInfo]:
        with self._session() as s:
            return [bot_info(b) for b in s.scalars(select(Bot).order_by(Bot.name))]

    def revoke_bot(self, name: str) -> BotInfo:
        """Revoke bot `name`'s token: it admits no new connection, and a running arena
        closes the live ones (it polls `active_tokens`). `StorageError` if no such bot."""
        with self._session(write=True) as s:
            bot = bot_named(s, name)
            if bot.revoked_at is None:
                bot.revoked_at = utc_now()
            s.flush()
            return bot_info(bot)

    def rotate_token(self, name: str, token_hash: str) -> BotInfo:
        """Give bot `name` a new token (its hash): the old one admits nothing from now
        on (live connections made with it are closed by a running arena), and a
        revoked bot is admitted again with the new one."""
        token_hash = _checked(token_hash)
        with self._session(write=True) as s:
            bot = bot_named(s, name)
            bot.token_hash = token_hash
            bot.token_changed_at = utc_now()
            bot.revoked_at = None
            s.flush()
            return bot_info(bot)

    def active_tokens(self) -> dict[str, str]:
        """Token hash -> bot name of every bot not revoked."""
        with self._session() as s:
            rows = s.execute(select(Bot.token_hash, Bot.name).where(Bot.revoked_at.is_(None)))
            return {h: n for h, n in rows}


def bot_named(s: Session, name: str) -> Bot:
    """Bot `name`'s row; `StorageError` if there is no such bot."""
    bot = s.scalars(select(Bot).where(Bot.name == name)).one_or_none()
    if bot is None:
        raise StorageError(f"no bot named {name!r}")
    return bot


def _checked(token_hash: str) -> str:
    """`token_hash`, if it is a hash (ValueError if not: a raw token is never stored)."""
    if not _HASH.fullmatch(token_hash):
        raise ValueError("token_hash must be a sha256 hex digest (see hash_token)")
    return token_hash
