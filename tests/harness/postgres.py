"""A throwaway PostgreSQL cluster for tests.

`postgres_cluster()` runs initdb in a temp dir (in memory, /dev/shm, where there
is one), starts the server on a free 127.0.0.1 port (unix sockets in the temp dir
too), yields a `PgCluster`, and always stops it (pg_ctl stop -m immediate, then the
postmaster PID from postmaster.pid if that fails) and removes the dir. As root (CI), the server
runs as an unprivileged user (`CFARENA_PG_USER`, default `nobody`) through
`runuser`, since postgres refuses to run as root. Any failure raises
`PgError` with the reason (and the server log tail): tests never skip.
`PgCluster.stop()` / `start()` take the server down and bring it back on the
same port (for tests of a database that goes away). `PgCluster.with_template()`
migrates a database once, which `create_database` then copies
(`CREATE DATABASE ... TEMPLATE`). `query()` runs one statement on a test's database;
its reads share a connection kept until the test ends (`close_kept`).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tests.harness.ports import free_port

SUPERUSER = "postgres"


class PgError(RuntimeError):
    """PostgreSQL could not be set up for the tests."""


def _bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if candidates:
        return candidates[-1]
    raise PgError(f"PostgreSQL binary {name!r} not found on PATH or in /usr/lib/postgresql")


@dataclass(frozen=True)
class PgCluster:
    host: str
    port: int
    socket_dir: Path
    data_dir: Path
    log: Path | None = None
    options: str = ""  # the server options it was started with (pg_ctl -o)
    template: str | None = None  # the database new ones copy (`with_template`)

    def stop(self) -> None:
        """Stop the server (fast: open connections are cut), waiting until it is down."""
        prefix, _user = _runner()
        _run([*prefix, _bin("pg_ctl"), "stop", "-D", str(self.data_dir), "-m", "fast", "-w",
              "-t", "30"], "pg_ctl stop", timeout=40)

    def start(self) -> None:
        """Start the server again after `stop()`, on the same port, waiting until it is up."""
        prefix, _user = _runner()
        log = ["-l", str(self.log)] if self.log is not None else []
        try:
            _run([*prefix, _bin("pg_ctl"), "start", "-D", str(self.data_dir), *log, "-w",
                  "-t", "60", "-o", self.options], "pg_ctl start", timeout=90)
        except PgError as exc:
            tail = _tail(self.log) if self.log is not None else ""
            raise PgError(f"{exc}; server log: {tail}") from exc

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@{self.host}:{self.port}/{database}"

    def create_database(self, name: str, *, empty: bool = False) -> str:
        """Create database `name` and return its SQLAlchemy URL: a copy of the cluster's
        migrated `template` where it has one (unless `empty`), else an empty database."""
        import psycopg

        source = f' TEMPLATE "{self.template}"' if self.template and not empty else ""
        with psycopg.connect(conninfo(self.url()), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{source}'.encode())
        return self.url(name)

    def with_template(self, name: str) -> PgCluster:
        """This cluster, its databases created as copies of a new database `name` with
        cfarena's schema (migrated once here: a copy is quicker than a migration)."""
        from cfarena.server.storage import open_database

        url = self.create_database(name, empty=True)
        open_database(url).close()  # closed: CREATE DATABASE ... TEMPLATE needs it unused
        return replace(self, template=name)


# libpq connection string -> a connection `query` keeps for SELECTs until `close_kept`
_kept: dict[str, Any] = {}
_kept_lock = threading.Lock()


def conninfo(url: str) -> str:
    """The libpq connection string of a SQLAlchemy `postgresql+psycopg://` URL."""
    return url.replace("postgresql+psycopg://", "postgresql://")


def query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """The rows of one statement on the database at `url` (SQLAlchemy form), committed.

    A SELECT goes over one connection per database kept until the test ends
    (`close_kept`, an autouse fixture of tests/conftest.py), in autocommit: a test that
    polls every few milliseconds starts no server process per poll (~6 ms of CPU each).
    If the server went away since (an outage under test), it is opened anew and the
    SELECT sent again: a SELECT given here must read only (no locks, no session
    settings; it may run twice). Any other statement gets a connection of its own, as
    before: a write is never sent twice."""
    import psycopg

    target = conninfo(url)
    if not sql.lstrip().lower().startswith("select"):
        with psycopg.connect(target, connect_timeout=3) as conn:
            cursor = conn.execute(sql.encode(), params or None)
            return list(cursor.fetchall()) if cursor.description else []
    with _kept_lock:
        kept = _kept.get(target)
        if kept is not None and not kept.closed:
            try:
                return list(kept.execute(sql.encode(), params or None).fetchall())
            except psycopg.OperationalError:
                if not kept.broken:
                    raise
            kept.close()
        kept = _kept[target] = psycopg.connect(target, connect_timeout=3, autocommit=True)
        return list(kept.execute(sql.encode(), params or None).fetchall())


def close_kept() -> None:
    """Close the connections `query` kept."""
    with _kept_lock:
        while _kept:
            _kept.popitem()[1].close()


def _runner() -> tuple[list[str], str | None]:
    """The command prefix running a program as the cluster owner, and that user (None: me)."""
    if os.geteuid() != 0:
        return [], None
    user = os.environ.get("CFARENA_PG_USER", "nobody")
    try:
        pwd.getpwnam(user)
    except KeyError:
        raise PgError(f"running as root, and user {user!r} for PostgreSQL does not exist "
                      "(set CFARENA_PG_USER to an unprivileged user)") from None
    return [shutil.which("runuser") or "runuser", "-u", user, "--"], user


def _run(cmd: list[str], what: str, timeout: float = 60.0) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PgError(f"{what} failed: {exc}") from exc
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip()[-2000:]
        raise PgError(f"{what} failed (exit {done.returncode}): {output}")


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-2000:]
    except OSError:
        return "(no server log)"


def _stop(prefix: list[str], pg_ctl: str, data: Path) -> None:
    pid_file = data / "postmaster.pid"
    if not pid_file.exists():
        return
    with contextlib.suppress(PgError):  # immediate: no checkpoint of data about to go
        _run([*prefix, pg_ctl, "stop", "-D", str(data), "-m", "immediate", "-w", "-t", "30"],
             "pg_ctl stop", timeout=40)
    if not pid_file.exists():
        return
    # pg_ctl could not stop it: signal the postmaster named in its own PID file.
    try:
        pid = int(pid_file.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return
    for sig in (signal.SIGQUIT, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
        for _ in range(50):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            except PermissionError:
                break
            time.sleep(0.1)


def _memory_dir() -> str | None:
    """/dev/shm where there is one (a cluster in memory: `CREATE DATABASE ... TEMPLATE`
    measured 3.5x quicker than on this machine's disk), else the usual temp dir."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


@contextlib.contextmanager
def postgres_cluster(attempts: int = 3) -> Iterator[PgCluster]:
    """A running throwaway cluster; trust auth for `postgres` on 127.0.0.1 and the socket."""
    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    prefix, user = _runner()
    root = Path(tempfile.mkdtemp(prefix="cfarena-pg-", dir=_memory_dir()))
    data, sockets, log = root / "data", root / "sock", root / "server.log"
    try:
        sockets.mkdir()
        if user is not None:
            entry = pwd.getpwnam(user)
            for path in (root, sockets):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        _run([*prefix, initdb, "-D", str(data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8",
              "--locale=C", "--no-sync"], "initdb")
        last = ""
        for _ in range(attempts):
            port = free_port()
            options = (f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets} -c fsync=off "
                       "-c synchronous_commit=off -c full_page_writes=off "
                       "-c max_connections=100")
            try:
                _run([*prefix, pg_ctl, "start", "-D", str(data), "-l", str(log), "-w",
                      "-t", "60", "-o", options], "pg_ctl start", timeout=90)
            except PgError as exc:
                last = f"{exc}; server log: {_tail(log)}"
                _stop(prefix, pg_ctl, data)
                continue
            cluster = PgCluster(host="127.0.0.1", port=port, socket_dir=sockets, data_dir=data,
                                log=log, options=options)
            yield cluster
            return
        raise PgError(f"PostgreSQL did not start after {attempts} attempts: {last}")
    finally:
        _stop(prefix, pg_ctl, data)
        shutil.rmtree(root, ignore_errors=True)
