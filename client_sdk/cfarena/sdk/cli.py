"""`python -m cfarena.sdk run TARGET`: load a Bot class and play it on a referee;
`python -m cfarena.sdk play TARGET --vs greedy`: play it locally (`cfarena.sdk.play`).

TARGET is a file `path/to/bot.py` or a module `cfarena.bots.greedy`, either
optionally followed by `:ClassName`; without a class name the module must
define exactly one Bot subclass. `--server` and `--token` default to the
environment variables CFARENA_SERVER and CFARENA_TOKEN (how a local tournament
hands them to the bots it spawns), then to 127.0.0.1:50051 and nothing.
Several addresses (`--server` repeated, or a comma list; a name that resolves to
several addresses) play the bot on several arenas of one database at once, one
stream per address, each reconnecting on its own (`cfarena.sdk.multi`).
`--tls` connects over TLS, verifying the referee's certificate against the
system's roots; `--tls-ca PATH` (or CFARENA_TLS_CA) against that CA file
instead (a self-signed certificate: the certificate itself). CFARENA_TLS=1 is
`--tls`.

Exit status: 0 when the referee closed the stream (a referee shutting down
does; with `--retries -1` the bot waits for it to come back instead) or on
SIGTERM/SIGINT, 1 when the connection failed (refused by the referee, or
retries exhausted), 2 for usage errors (bad arguments, a target that cannot be
loaded, no token).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import importlib.util
import inspect
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import NoReturn

import grpc

from cfarena.bots import bundled_names
from cfarena.sdk.bot import Bot
from cfarena.sdk.client import MAX_VERSION_CHARS, BotClient, BotConnectionError
from cfarena.sdk.multi import MultiClient, make_clients, resolve_servers, split_servers
from cfarena.sdk.types import TimeControl

PROG = "python -m cfarena.sdk"
DEFAULT_SERVER = "127.0.0.1:50051"


class UsageError(Exception):
    """A command-line problem: reported on one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


# ------------------------------------------------------------------- targets


def _load_module(spec_text: str) -> ModuleType:
    looks_like_file = spec_text.endswith(".py") or "/" in spec_text or os.sep in spec_text
    if looks_like_file:
        # os.path, not pathlib: a forked bot (cfarena.sdk.forkserver) would import it
        if not os.path.isfile(spec_text):
            raise UsageError(f"no such bot file: {spec_text}")
        stem = os.path.splitext(os.path.basename(spec_text))[0]
        name = "cfarena_bot_" + "".join(c if c.isalnum() else "_" for c in stem)
        # let the bot import helper modules that sit next to it
        sys.path.insert(0, os.path.dirname(os.path.realpath(spec_text)))
        spec = importlib.util.spec_from_file_location(name, os.path.normpath(spec_text))
        if spec is None or spec.loader is None:
            raise UsageError(f"cannot load {spec_text} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as err:
            raise _cannot_import(spec_text, err) from err
        return module
    try:
        return importlib.import_module(spec_text)
    except ModuleNotFoundError as err:
        if err.name and spec_text.startswith(err.name):
            raise UsageError(f"no such bot module: {spec_text}") from err
        raise _cannot_import(spec_text, err) from err
    except Exception as err:
        raise _cannot_import(spec_text, err) from err


def _cannot_import(spec_text: str, err: Exception) -> UsageError:
    """The error of a bot that raised `err` on import, naming where (its innermost frame
    in a file, not the import machinery's)."""
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if not f.filename.startswith("<") and f.filename != __file__]
    where = f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
    return UsageError(f"cannot import {spec_text}: {type(err).__name__}: {err}{where}")


def _split_target(target: str) -> tuple[str, str | None]:
    head, sep, tail = target.rpartition(":")
    if sep and tail.isidentifier() and head:
        return head, tail
    return target, None


def load_bot_class(target: str) -> type[Bot]:
    """The Bot subclass TARGET names (see the module docstring); UsageError if none."""
    spec_text, class_name = _split_target(target)
    module = _load_module(spec_text)
    if class_name is not None:
        obj = getattr(module, class_name, None)
        if not (isinstance(obj, type) and issubclass(obj, Bot)):
            raise UsageError(f"{spec_text} has no Bot subclass named {class_name}")
        return obj
    found = [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type)
        and issubclass(obj, Bot)
        and obj is not Bot
        and obj.__module__ == module.__name__
        and not inspect.isabstract(obj)
    ]
    if not found:
        raise UsageError(f"{spec_text} defines no Bot subclass")
    if len(found) > 1:
        names = ", ".join(sorted(c.__name__ for c in found))
        raise UsageError(f"{spec_text} defines several Bot subclasses ({names}); add :ClassName")
    return found[0]


# ----------------------------------------------------------------------- run


def _add_connection_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server", action="append", metavar="HOST:PORT[,HOST:PORT...]",
        help="referee address; repeat it, or separate addresses with commas, to play on "
        "several arenas of one database at once (one stream each, the capacity shared: "
        "the bot never plays more than --capacity matches in total); a name that "
        f"resolves to several addresses is one stream per address (default: "
        f"$CFARENA_SERVER or {DEFAULT_SERVER})"
    )
    parser.add_argument("--token", help="the bot's secret token (default: $CFARENA_TOKEN)")
    parser.add_argument(
        "--capacity", type=int, default=int(os.environ.get("CFARENA_CAPACITY", "1") or 1),
        help="matches played at once, 1-64 (default: $CFARENA_CAPACITY or 1)"
    )
    parser.add_argument("--name", help="client description for the referee's logs")
    parser.add_argument(
        "--version", dest="bot_version", default=os.environ.get("CFARENA_BOT_VERSION"),
        help="the bot's version, rated separately by a competition arena (default: "
        "$CFARENA_BOT_VERSION, else the Bot class's `version` attribute)",
    )
    parser.add_argument(
        "--tls", action="store_true",
        help="connect over TLS, verifying the referee against the system's CA roots "
        "(default: $CFARENA_TLS=1, else plaintext)")
    parser.add_argument(
        "--tls-ca", metavar="PATH",
        help="connect over TLS, verifying the referee against this PEM CA certificate "
        "(default: $CFARENA_TLS_CA)")
    parser.add_argument(
        "--retries",
        type=int,
        default=10,
        help="consecutive failed connection attempts before giving up; -1 = never, and "
        "wait for a referee that shuts down to come back (default 10)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Play a cfarena bot on a referee, or locally.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="load a Bot class and play it on a referee")
    run.add_argument("target", help="path/to/bot.py[:Class] or package.module[:Class]")
    _add_connection_args(run)
    _add_play_parser(sub)
    return parser


def _add_play_parser(sub: argparse._SubParsersAction[_Parser]) -> None:
    """`play`: games in this process against the sample bots (cfarena.sdk.play)."""
    play = sub.add_parser(
        "play", help="play games in this process, under the referee's rules and time "
        "control, against the sample bots (no referee, no network)")
    play.add_argument("target", help="path/to/bot.py[:Class] or package.module[:Class]")
    play.add_argument(
        "--vs", action="append", metavar="BOT",
        help=f"an opponent: a sample bot ({bundled_names()}) or another bot target; repeat "
        "it for more seats (default: greedy)")
    play.add_argument("--players", type=int,
                      help="seats at the table, filled with the --vs bots again in order "
                      "(default: your bot and one seat per --vs)")
    play.add_argument("--rules", default="standard",
                      help="preset: standard, maltese, trains (default: standard)")
    play.add_argument("--rule", action="append", metavar="KEY=VALUE",
                      help="a rule option over the preset, e.g. rounds=single (repeatable)")
    play.add_argument("--games", type=int, default=1,
                      help="games to play; your bot moves one seat on each game (default 1)")
    play.add_argument("--seed", type=int,
                      help="seed of the first game, the next ones count up (default: random)")
    play.add_argument("--log", metavar="FILE",
                      help="write the games' logs to FILE, one a line (JSON Lines), for "
                      "`cfarena replay --file FILE MATCH` and `cfarena verify --file FILE`")
    defaults = TimeControl()
    play.add_argument("--timeout-ms", type=int, default=defaults.move_timeout_ms,
                      help=f"time per decision (default {defaults.move_timeout_ms}, the "
                      "referee's)")
    play.add_argument("--bank-ms", type=int, default=defaults.bank_ms,
                      help=f"time bank per match (default {defaults.bank_ms})")
    play.add_argument("--increment-ms", type=int, default=defaults.increment_ms,
                      help=f"bank increment per decision (default {defaults.increment_ms})")
    play.add_argument("--strikes", type=int, default=defaults.strikes,
                      help=f"faults that forfeit a match (default {defaults.strikes})")


def _client_from_args(
    args: argparse.Namespace, factory: Callable[[], Bot], label: str
) -> BotClient | MultiClient:
    given = args.server or [os.environ.get("CFARENA_SERVER") or DEFAULT_SERVER]
    try:
        servers = split_servers(given)
    except ValueError as err:
        raise UsageError(f"--server: {err}") from None
    token = args.token or os.environ.get("CFARENA_TOKEN") or ""
    if not token:
        raise UsageError("no token: pass --token or set CFARENA_TOKEN")
    if not (1 <= args.capacity <= 64):
        raise UsageError(f"--capacity must be 1-64, got {args.capacity}")
    if args.bot_version is not None and len(args.bot_version) > MAX_VERSION_CHARS:
        raise UsageError(f"--version must be at most {MAX_VERSION_CHARS} characters")
    if args.retries < -1:
        raise UsageError(f"--retries must be -1 or more, got {args.retries}")
    credentials = _tls_credentials(args)
    try:
        bot = factory()
    except Exception as err:
        raise UsageError(f"cannot create {label}: {type(err).__name__}: {err}") from err
    return make_clients(
        bot,
        resolve_servers(servers),
        token,
        capacity=args.capacity,
        client_name=args.name,
        version=args.bot_version or None,
        max_retries=None if args.retries == -1 else args.retries,
        reconnect=args.retries != 0,
        credentials=credentials,
    )


def _tls_credentials(args: argparse.Namespace) -> grpc.ChannelCredentials | None:
    """TLS credentials from --tls / --tls-ca (or their environment variables), or None
    for a plaintext connection; UsageError for a CA file that cannot be used."""
    ca_path = args.tls_ca or os.environ.get("CFARENA_TLS_CA") or None
    tls = args.tls or os.environ.get("CFARENA_TLS", "") not in ("", "0")
    if ca_path is None:
        return grpc.ssl_channel_credentials() if tls else None
    option = "--tls-ca" if args.tls_ca else "CFARENA_TLS_CA"
    try:
        with open(ca_path, "rb") as ca_file:
            data = ca_file.read()
    except FileNotFoundError:
        raise UsageError(f"{option} {ca_path}: no such file") from None
    except OSError as err:
        raise UsageError(f"{option} {ca_path}: cannot read it: "
                         f"{(err.strerror or str(err)).lower()}") from None
    if b"-----BEGIN CERTIFICATE-----" not in data:
        raise UsageError(f"{option} {ca_path}: not a PEM certificate")
    return grpc.ssl_channel_credentials(root_certificates=data)


async def _run_until_signal(client: BotClient | MultiClient) -> int | None:
    """Run the client; the signal number if SIGTERM/SIGINT stopped it, else None."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def stop(signum: int) -> None:
        received.append(signum)
        task.cancel()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop, signum)
    try:
        await client.run()
    except asyncio.CancelledError:
        if received:
            return received[0]
        raise
    return None


def _setup_logging(args: argparse.Namespace) -> None:
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )


def _play(args: argparse.Namespace, factory: Callable[[], Bot], label: str) -> int:
    _setup_logging(args)
    client = _client_from_args(args, factory, label)
    log = logging.getLogger("cfarena.sdk")
    log.info("playing %s on %s", label, client.server)
    try:
        signum = asyncio.run(_run_until_signal(client))
    except BotConnectionError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # a SIGINT before the handlers were installed
        return 0
    if signum is not None:
        log.info("stopped by %s", signal.Signals(signum).name)
    return 0


def main(argv: Sequence[str] | None = None, *, collector_off: bool = False) -> int:
    """Entry point of `python -m cfarena.sdk`; returns the exit status. `collector_off`:
    the caller (`python -m cfarena.sdk`) turned the garbage collector off while the SDK
    loaded; it is back on before the bot's code runs (`collect_from_now`)."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "play":
            from cfarena.sdk.play import play_command

            if collector_off:
                collect_from_now()
            return play_command(args)
        if collector_off:
            collect_from_now()
        cls = load_bot_class(args.target)
        return _play(args, cls, cls.__name__)
    except UsageError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2


def collect_from_now() -> None:
    """The garbage collector on, as in any program, for the bot's code: what start-up
    made (the SDK's modules, as long-lived as the process) first moved out of its sight
    (`gc.freeze`), so that no collection, the one at exit included, walks it again."""
    gc.freeze()
    gc.enable()


def run_main(factory: Callable[[], Bot], argv: Sequence[str] | None = None) -> int:
    """`if __name__ == "__main__": raise SystemExit(run_main(MyBot))` for a runnable bot file.

    Accepts the connection options of `python -m cfarena.sdk run`.
    """
    label = getattr(factory, "__name__", "bot")
    parser = _Parser(prog=label, description=f"Play {label} on a cfarena referee.")
    _add_connection_args(parser)
    args = parser.parse_args(argv)
    try:
        return _play(args, factory, label)
    except UsageError as err:
        print(f"{label}: error: {err}", file=sys.stderr)
        return 2
