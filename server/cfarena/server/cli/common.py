"""Helpers shared by the CLI commands: errors with exit codes, the database, output."""

from __future__ import annotations

import json
import math
import sys
import tomllib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.core import TyperGroup

from cfarena.engine import Rules, RulesError
from cfarena.server.database_url import DEFAULT_URL

if TYPE_CHECKING:
    from cfarena.server.storage import Database

USAGE_ERROR = 2
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

DbOption = typer.Option(
    DEFAULT_URL, "--db", envvar="CFARENA_DB",
    help="database URL: sqlite:///FILE or postgresql://USER:PW@HOST[:PORT]/DB "
    "(postgres:// and postgresql+psycopg:// work too)",
)


def fail(message: str, code: int = USAGE_ERROR) -> NoReturn:
    """Print a one-line error to stderr and exit (2 = usage error)."""
    err.print(f"[bold red]error:[/] {message}", soft_wrap=True)
    raise typer.Exit(code)


class OneLineErrors(TyperGroup):
    """The `cfarena` group: click's usage errors (unknown command or option, a missing
    argument, a value of the wrong type) as one line on stderr and exit 2, not typer's
    boxed usage block; bare `cfarena` or `cfarena bots` still shows the help."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode,
                                windows_expand_args, **extra)
        try:
            result = super().main(args, prog_name, complete_var, False,
                                  windows_expand_args, **extra)
        except NoArgsIsHelpError as exc:  # the help is already printed
            sys.exit(exc.exit_code)
        except ClickException as exc:
            ctx = getattr(exc, "ctx", None)
            hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
            err.print(Text.assemble(("error: ", "bold red"), exc.format_message() + hint),
                      soft_wrap=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            err.print("aborted")
            sys.exit(1)
        # what standalone mode does: a typer.Exit's code comes back as the result
        sys.exit(result if isinstance(result, int) else 0)


@contextmanager
def database(url: str, *, create: bool = True, storage_code: int = 1) -> Iterator[Database]:
    """Open the database or exit 2 with a one-line message; a StorageError while it is
    used is one line too (exit `storage_code`).

    Commands that only read pass `create=False`: a database that does not exist
    is then an error ("no database at PATH"), not a new empty one.
    """
    # loaded here, not above: SQLAlchemy and Alembic would slow every `--help`
    from cfarena.server.storage import StorageError, open_database

    try:
        db = open_database(url, create=create)
    except StorageError as exc:
        fail(str(exc))
    except Exception as exc:  # e.g. a malformed URL raising in SQLAlchemy
        fail(f"cannot open database {url}: {exc}")
    try:
        yield db
    except StorageError as exc:
        fail(str(exc), code=storage_code)
    finally:
        db.close()


MAX_SEED = 2**63 - 1  # a seed fits a signed 64-bit column (PostgreSQL bigint)


def check_seed(seed: int | None) -> None:
    """Exit 2 unless `seed` is None or a whole number 0..MAX_SEED."""
    if seed is not None and not 0 <= seed <= MAX_SEED:
        fail(f"--seed must be a whole number from 0 to {MAX_SEED} (2**63-1), got {seed}")


MAX_MS = 600_000  # ten minutes: a bank fed by thousands of increments still fits the wire


def check_range(option: str, value: int, low: int, high: int | None = None) -> None:
    """Exit 2 unless low <= value (<= high)."""
    if value < low:
        fail(f"{option} must be at least {low}, got {value}")
    if high is not None and value > high:
        fail(f"{option} must be at most {high}, got {value}")


MAX_ID = 2**63 - 1  # a row id (tournament) or count fits a signed 64-bit column


def check_id(option: str, value: int | None) -> None:
    """Exit 2 unless `value` is None or a whole number 1..MAX_ID (a tournament id, a
    --limit): a larger one would overflow the database's integer column."""
    if value is not None:
        check_range(option, value, 1, MAX_ID)


def check_time_control(timeout_ms: int, bank_ms: int = 0, increment_ms: int = 0) -> None:
    """Exit 2 unless each time (ms) is within what a match can use: at most MAX_MS,
    the decision timeout at least 1 ms."""
    check_range("--timeout-ms", timeout_ms, 1, MAX_MS)
    check_range("--bank-ms", bank_ms, 0, MAX_MS)
    check_range("--increment-ms", increment_ms, 0, MAX_MS)


def check_connect_timeout(seconds: float) -> None:
    """Exit 2 unless `seconds` (--connect-timeout) is a finite number above 0."""
    if not 0 < seconds < math.inf:
        fail(f"--connect-timeout must be a number of seconds above 0, got {seconds:g}")


def make_log_dir(log_dir: Path) -> None:
    """Create --log-dir (and its parents), or exit 2 saying why it cannot be one."""
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        fail(f"--log-dir {log_dir}: exists and is not a directory")
    except OSError as exc:
        fail(f"--log-dir {log_dir}: cannot create it: {exc.strerror or exc}")


def write_output(option: str, path: Path, write: Callable[[], object]) -> None:
    """Run `write` (which writes `path`); exit 2 with one line naming `option` and the
    reason when the file cannot be written (no such directory, no permission, full)."""
    try:
        write()
    except OSError as exc:
        fail(f"{option} {path}: cannot write: {exc.strerror or exc}")


def load_rules_file(path: Path) -> dict[str, Any]:
    """A rules file: TOML (`preset = "maltese"`, `spokes = 6`) or JSON with the same keys."""
    try:
        text = path.read_text()
    except OSError as exc:
        fail(f"--rules-file {path}: {exc.strerror or exc}")
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        fail(f"--rules-file {path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'}: "
             f"{exc}")
    if not isinstance(data, dict):
        fail(f"--rules-file {path}: expected a table of options")
    return data


def build_rules(preset: str | None, overrides: Sequence[str], rules_file: Path | None,
                players: int) -> Rules:
    """A rules file, then `--rules PRESET`, then `--rule KEY=VALUE` overrides (later wins).

    Exits 2 with a message naming the option when the rules are not valid, or
    not valid at a table of `players`.
    """
    try:
        file_options = load_rules_file(rules_file) if rules_file is not None else {}
        name = preset or str(file_options.pop("preset", "standard"))
        file_options.pop("preset", None)
        rules = Rules.preset(name).with_options(**file_options)
        options: dict[str, str] = {}
        for item in overrides:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                fail(f"--rule expects KEY=VALUE, got {item!r}")
            options[key.strip()] = value.strip()
        rules = rules.with_options(**options)
        rules.resolve(players)
        return rules
    except RulesError as exc:
        fail(str(exc))


def light_table(*headers: str, **options: Any) -> Table:
    """A table with one rule, under its header, and two spaces between columns (no
    frame): nine or ten columns fit in 80."""
    return Table(*headers, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                 padding=(0, 1, 0, 0), **options)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def seed_json(seed: int | None) -> str | None:
    """A seed as JSON writes it: a decimal string, since seeds are 64-bit and a JSON
    number above 2**53 is rounded by JavaScript (and by other doubles-only readers)."""
    return None if seed is None else str(seed)


def config_json(config: dict[str, Any]) -> dict[str, Any]:
    """A tournament config for --json: its seed as a decimal string (it is 63-bit)."""
    seed = config.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool):
        return {**config, "seed": seed_json(seed)}
    return config

