"""The id a bot is given for a match (`MatchStart.match_id`, what a bot logs), as
made from the stored match: a tournament's match is stored as `T<tournament>-<key>`
but its bots are told an opaque id (`wire_match_id`); a ladder match's bots are told
its stored id. The organiser's `cfarena show ID` and the entrant's pages map one to
the other (`bot_match_id`, and the storage lookup `Database.match_id_given`)."""

from __future__ import annotations

import hashlib
import hmac
import re

WIRE_ID = re.compile(r"[0-9a-f]{16}")  # what `wire_match_id` gives


def wire_match_id(seed: int, key: str) -> str:
    """The id bots see for the tournament match `key` dealt from `seed`: 16 hex digits
    of HMAC-SHA256(seed, key). The key (game, rotation) is the organiser's business, and
    the id must tell a bot nothing about the deal: without the seed the id looks
    random, so it neither reveals the deal nor links the rotations of one deal (their
    keys differ). Finding the seed from it means guessing the seed, which a bot could
    do as well by matching its dealt hand, and cannot when the seed is unpredictable
    (the default, 62 bits from the OS). It is the same in every run with the same
    seed, so a bot that seeds its own randomness from it (the bundled random bot)
    replays its choices under `run-tournament --seed`."""
    digest = hmac.new(seed.to_bytes(8, "big", signed=True), key.encode(), hashlib.sha256)
    return digest.hexdigest()[:16]


def bot_match_id(match_id: str, tournament_id: int | None, seed: int, key: str) -> str:
    """The id the bots of a stored match were given: a tournament match's
    `wire_match_id`, else its stored id (the arena tells its bots that)."""
    return match_id if tournament_id is None else wire_match_id(seed, key)
