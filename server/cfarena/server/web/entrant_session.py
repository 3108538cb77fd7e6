"""An entrant's session on the web page: signed in with their bot's token, kept in a
signed cookie (itsdangerous), ended by sign-out, by rotating or revoking the token,
or when `serve` restarts.

- The token itself is never kept: sign-in hashes it (`credentials.hash_token`) and
  finds the bot by that hash, as the referee does. The cookie holds the bot's id and
  a fingerprint of its token hash (HMAC-SHA256 under the session key), signed and
  timestamped; every request checks the fingerprint against the bot's current hash,
  so a rotated (or revoked) token ends every session made with it at once.
- The cookie is HttpOnly, SameSite=Strict, Path=/me (no other page gets it), Secure
  when the page is served over https, and valid for `MAX_AGE_S`.
- Forms are posted with a CSRF token (double submit: a random value in a cookie of its
  own and in the form, compared in constant time), and a POST whose Origin names
  another host is refused, so no other site signs a visitor in or out.
- The session key is random per `serve` process (`WebSite.session_key`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from fastapi import Request
from fastapi.responses import Response
from itsdangerous import BadSignature, URLSafeTimedSerializer

from cfarena.server.storage import BotInfo

COOKIE = "cfarena_entrant"
CSRF_COOKIE = "cfarena_csrf"
PATH = "/me"
MAX_AGE_S = 12 * 3600


@dataclass(frozen=True, slots=True)
class SignedIn:
    """Who a valid session cookie names: the bot, and its token's fingerprint."""

    bot: int  # its id (a tournament's entrant may share a name with a ladder bot)
    fingerprint: str


class EntrantSessions:
    """Makes and reads the session cookie under one key (see the module docstring)."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._signer = URLSafeTimedSerializer(key, salt="cfarena-entrant-session")

    def fingerprint(self, token_hash: str) -> str:
        """What the cookie keeps of a token: HMAC-SHA256(session key, its hash)."""
        return hmac.new(self._key, token_hash.encode(), hashlib.sha256).hexdigest()

    def sign_in(self, response: Response, request: Request, bot: BotInfo) -> None:
        """Set the session cookie for `bot` on `response`."""
        value = self._signer.dumps({"bot": bot.id,
                                    "fp": self.fingerprint(bot.token_hash)})
        response.set_cookie(COOKIE, value, max_age=MAX_AGE_S, path=PATH, httponly=True,
                            samesite="strict", secure=request.url.scheme == "https")

    def signed_in(self, request: Request) -> SignedIn | None:
        """The session the request's cookie carries, if it is genuine and not too old
        (whether its bot's token still matches is `still_valid`'s to say)."""
        value = request.cookies.get(COOKIE)
        if not value:
            return None
        try:
            data = self._signer.loads(value, max_age=MAX_AGE_S)
        except BadSignature:  # tampered with, made under another key, or expired
            return None
        if not isinstance(data, dict) or type(data.get("bot")) is not int \
                or not isinstance(data.get("fp"), str):
            return None
        return SignedIn(data["bot"], data["fp"])

    def still_valid(self, session: SignedIn, bot: BotInfo | None) -> bool:
        """Whether `bot` (the session's, as stored now) still has the token the session
        was made with, and is not revoked."""
        return (bot is not None and bot.revoked_at is None
                and hmac.compare_digest(session.fingerprint, self.fingerprint(bot.token_hash)))


def sign_out(response: Response) -> None:
    """Remove the session cookie."""
    response.delete_cookie(COOKIE, path=PATH, httponly=True, samesite="strict")


def csrf_token(request: Request) -> str:
    """The request's CSRF cookie value, or a fresh one (`keep_csrf` sets it)."""
    value = request.cookies.get(CSRF_COOKIE)
    return value if value and len(value) >= 16 else secrets.token_urlsafe(24)


def keep_csrf(response: Response, request: Request, token: str) -> None:
    """Set the CSRF cookie to `token` (what the page's forms carry)."""
    response.set_cookie(CSRF_COOKIE, token, path=PATH, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")


def csrf_ok(request: Request, form_token: str | None) -> bool:
    """Whether a POST comes from the arena's own page: the form's CSRF token equals the
    cookie's, and the Origin header, when the browser sends one, names this host."""
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
        return False
    cookie = request.cookies.get(CSRF_COOKIE)
    if not cookie or not form_token:
        return False
    return hmac.compare_digest(cookie.encode(), form_token.encode())
