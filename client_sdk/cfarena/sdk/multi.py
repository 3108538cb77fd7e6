"""One bot on several arenas at once: `MultiClient` keeps one `BotClient` stream per
address (each reconnecting on its own), all playing the same `Bot` object.

Addresses: "host:port" items, several per string separated by commas
(`split_servers`); a host name that resolves to several addresses gets one stream
per address (`resolve_servers`; over TLS the certificate is still checked against
the name). A name's addresses are looked up once, when the bot starts (restart it
to follow a change); a name with one address, or one that does not resolve now,
is kept as it is, and gRPC resolves it again on every reconnect.

Capacity is shared, not split: every stream declares the bot's whole capacity, and
arenas that share one database (a fleet, docs/ARENA.md "Running on several
machines") never seat it in more matches than that in total, counted across all of
them. Arenas on different databases know nothing of each other: to play on those,
run one process per arena, each with its own share of the capacity.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cfarena.sdk.bot import Bot
from cfarena.sdk.client import BotClient, BotConnectionError

log = logging.getLogger("cfarena.sdk")

Resolver = Callable[..., Sequence[tuple[Any, ...]]]


@dataclass(frozen=True, slots=True)
class Target:
    """One stream's address ("ip:port" or as given), and the name a TLS certificate
    must carry when the address is one of several a name resolved to."""

    address: str
    tls_name: str | None = None


def _as_given(address: str) -> bool:
    """A gRPC target with a scheme (unix:PATH, dns:///NAME:PORT...): passed on as it is."""
    return address.startswith(_SCHEMES) or "://" in address


_SCHEMES = ("unix:", "unix-abstract:", "vsock:")


def split_servers(values: Sequence[str]) -> list[str]:
    """The addresses in `values` (each one or several, comma-separated), in order, once
    each; ValueError for an empty item or one that is not HOST:PORT (or a gRPC target
    with a scheme, such as unix:PATH)."""
    out: list[str] = []
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if not item:
                raise ValueError(f"empty address in {value!r}")
            if not _as_given(item):
                _host_port(item)
            if item not in out:
                out.append(item)
    if not out:
        raise ValueError("no address")
    return out


def _host_port(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{address!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def resolve_servers(addresses: Sequence[str], resolve: Resolver = socket.getaddrinfo
                    ) -> list[Target]:
    """One target per address; a host name that resolves to several addresses is one
    target per address (the same address reached twice is one target)."""
    out: list[Target] = []
    for address in addresses:
        if _as_given(address):
            if address not in {t.address for t in out}:
                out.append(Target(address))
            continue
        host, port = _host_port(address)
        found: list[str] = []
        if not _is_ip(host):
            try:
                infos = resolve(host, port, type=socket.SOCK_STREAM)
            except (OSError, UnicodeError) as err:
                log.warning("cannot resolve %s now (%s); gRPC will try again", host, err)
                infos = []
            for info in infos:
                ip = str(info[4][0])
                shown = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
                if shown not in found:
                    found.append(shown)
        targets = ([Target(a, host) for a in found] if len(found) > 1
                   else [Target(address)])
        for target in targets:
            if target.address not in {t.address for t in out}:
                out.append(target)
    return out


class MultiClient:
    """Plays `bot` on every target at once, one `BotClient` per target (made by
    `make_client(target)`). `run()` returns when every stream has ended; it raises the
    first `BotConnectionError` only if every stream ended with one (a stream refused
    or given up on while others play is reported and left)."""

    def __init__(self, targets: Sequence[Target],
                 make_client: Callable[[Target], BotClient]) -> None:
        if not targets:
            raise ValueError("no target")
        self.clients = [make_client(t) for t in targets]
        self.server = ", ".join(t.address for t in targets)

    @property
    def connections(self) -> int:
        return sum(c.connections for c in self.clients)

    async def run(self) -> None:
        tasks = [asyncio.create_task(c.run(), name=f"stream {c.server}") for c in self.clients]
        errors: list[BotConnectionError] = []
        try:
            for done in asyncio.as_completed(tasks):
                try:
                    await done
                except BotConnectionError as err:
                    errors.append(err)
                    left = sum(not t.done() for t in tasks)
                    if left:
                        log.error("%s (%d other stream%s still playing)", err, left,
                                  "" if left == 1 else "s")
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if len(errors) == len(tasks):
            raise errors[0]


def make_clients(bot: Bot, targets: Sequence[Target], token: str, **options: Any
                 ) -> BotClient | MultiClient:
    """A `BotClient` for one target, else a `MultiClient` (the bot's whole capacity
    declared on each stream; see the module docstring)."""
    extra = list(options.pop("channel_options", ()))

    def make(target: Target) -> BotClient:
        names = [("grpc.ssl_target_name_override", target.tls_name),
                 ("grpc.default_authority", target.tls_name)] if target.tls_name else []
        return BotClient(bot, target.address, token, channel_options=[*extra, *names],
                         **options)

    if len(targets) == 1:
        return make(targets[0])
    return MultiClient(targets, make)


__all__ = ["MultiClient", "Target", "make_clients", "resolve_servers", "split_servers"]
