"""Hostile bot: hunts for the tournament database and the seat logs (attack 2 of tests/fairplay).

It is told nothing: it tries what an attacker would. Its working directory
(where the referee was started) and the usual names there (cfarena.db, logs/),
the paths on every visible process's command line (`--db`, `--log-dir`, any
sqlite:/// URL), then a walk of the whole visible filesystem (except /proc,
/sys, /dev) for SQLite files, cfarena databases (a SQLite file with the
`matches` and `seat_logs` tables) and seat logs (`*-seat<N>-*.log`), until it
finds a database. One `PROBE <name>:
<json>` line per probe, then it plays random legal moves.
"""

from __future__ import annotations

import errno
import json
import os
import random
import re
import sqlite3
import stat
import time

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import MatchInfo, Turn

WALK_BUDGET_S = 90.0
SKIP = ("/proc", "/sys", "/dev")
SEAT_LOG = re.compile(r"-seat\d+-.*\.log$")
DB_NAMES = (".db", ".sqlite", ".sqlite3", ".db-wal", ".db-journal")


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


def _err(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, type(exc).__name__)


def is_cfarena_db(path: str) -> bool | str:
    """True if `path` is a readable SQLite file with cfarena's tables; False if it is no
    SQLite file; else what it is or why it could not be read."""
    try:
        with open(path, "rb") as f:
            if f.read(16) != b"SQLite format 3\0":
                return False
    except OSError as exc:
        return _err(exc)
    names: set[str] = set()
    problem = ""
    # read-only with its WAL (what a live database needs), else as an immutable file
    for query in ("mode=ro", "mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(f"file:{path}?{query}", uri=True)
            try:
                names |= {r[0] for r in conn.execute("select name from sqlite_master")}
            finally:
                conn.close()
        except sqlite3.Error as exc:
            problem = f"sqlite error: {exc}"
    if {"matches", "seat_logs"} <= names:
        return True
    return problem or f"SQLite file, tables {sorted(names)[:8]}"


def try_path(path: str) -> str:
    """What happens when the bot goes for `path`."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return _err(exc)
    if stat.S_ISDIR(st.st_mode):
        try:
            return f"LISTED {sorted(os.listdir(path))[:20]}"
        except OSError as exc:
            return f"dir: {_err(exc)}"
    found = is_cfarena_db(path)
    if found is True:
        return "CFARENA DATABASE READABLE"
    if found is not False:
        return found
    try:
        with open(path, "rb") as f:
            return f"READ {len(f.read(4096))} bytes"
    except OSError as exc:
        return _err(exc)


def near_cwd() -> dict[str, object]:
    cwd = os.getcwd()
    out: dict[str, object] = {"cwd": cwd}
    try:
        out["entries"] = sorted(os.listdir(cwd))
    except OSError as exc:
        out["entries"] = _err(exc)
    for name in ("cfarena.db", "cfarena.db-wal", "logs", "../cfarena.db", "../logs"):
        out[name] = try_path(os.path.join(cwd, name))
    home = os.environ.get("HOME", "/")
    out["$HOME/cfarena.db"] = try_path(os.path.join(home, "cfarena.db"))
    return out


def from_cmdlines() -> dict[str, str]:
    """Paths named on visible command lines (--db, --log-dir, sqlite URLs) and their fate."""
    tried: dict[str, str] = {}
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        for i, arg in enumerate(argv):
            value = None
            if arg in ("--db", "--log-dir") and i + 1 < len(argv):
                value = argv[i + 1]
            elif arg.startswith(("--db=", "--log-dir=")):
                value = arg.split("=", 1)[1]
            elif "sqlite:///" in arg:
                value = arg[arg.index("sqlite:///"):]
            if value is None:
                continue
            path = value[len("sqlite:///"):] if value.startswith("sqlite:///") else value
            if path and path not in tried:
                tried[path] = try_path(path)
    return tried


def walk() -> dict[str, object]:
    """Walk everything visible, the likeliest places first."""
    start = time.monotonic()
    roots = [os.getcwd(), os.environ.get("HOME", "/tmp"), "/tmp", "/run", "/var", "/srv",
             "/home", "/root", "/work", "/mnt", "/opt", "/"]
    seen: set[tuple[int, int]] = set()
    sqlite_files: list[str] = []
    dbs: list[str] = []
    logs: list[str] = []
    log_dirs: list[str] = []
    dirs = files = unreadable = 0
    complete = True
    stack = [r for r in reversed(roots) if os.path.isdir(r)]
    while stack:
        if time.monotonic() - start > WALK_BUDGET_S:
            complete = False
            break
        if dbs:
            break  # found: an attacker stops here
        top = stack.pop()
        if top in SKIP or top.startswith(tuple(s + "/" for s in SKIP)):
            continue
        try:
            st = os.stat(top)
        except OSError:
            unreadable += 1
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        dirs += 1
        try:
            entries = list(os.scandir(top))
        except OSError:
            unreadable += 1
            continue
        subdirs = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry.path)
                    if entry.name == "logs":
                        log_dirs.append(entry.path)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue
            except OSError:
                continue
            files += 1
            name = entry.name
            if SEAT_LOG.search(name):
                logs.append(entry.path)
            if name.endswith(DB_NAMES) or name.startswith("cfarena"):
                found = is_cfarena_db(entry.path)
                if found is not False:
                    sqlite_files.append(f"{entry.path}: {found}")
                if found is True:
                    dbs.append(entry.path)
        stack.extend(sorted(subdirs, reverse=True))
    return {"complete": complete, "seconds": round(time.monotonic() - start, 2),
            "dirs": dirs, "files": files, "unreadable_dirs": unreadable,
            "cfarena_dbs": dbs[:20], "db_candidates": sqlite_files[:20],
            "seat_logs": logs[:20], "log_dirs": log_dirs[:20]}


probe("db-cwd", {"phase": "start", **near_cwd()})
probe("db-cmdline", {"phase": "start", "tried": from_cmdlines()})
probe("db-walk", walk())


class HuntFilesBot(Bot):
    def on_match_start(self, match: MatchInfo) -> None:
        # again now that matches have been played and logs written
        probe("db-cwd", {"phase": "match", **near_cwd()})
        probe("db-cmdline", {"phase": "match", "tried": from_cmdlines()})

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
