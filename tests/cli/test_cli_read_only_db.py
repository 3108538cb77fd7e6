"""A database the commands cannot write (issue 21): the commands that only read it work,
and touch nothing; one that would write says in one line that it is read-only."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from .helpers import one_match_database, run_in_process


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """`directory` read-only: a read-only bind mount of itself (as root, whom permissions
    do not stop), else no write permission on it and its files."""
    if os.geteuid() == 0:
        subprocess.run(["mount", "--bind", str(directory), str(directory)], check=True)
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(directory)], check=True)
            yield
        finally:
            subprocess.run(["umount", str(directory)], check=True)
        return
    modes = {p: p.stat().st_mode for p in [directory, *directory.iterdir()]}
    for path in modes:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        yield
    finally:
        for path, mode in modes.items():
            path.chmod(mode)


def _digests(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in directory.iterdir()}


def test_reads_work_on_a_read_only_database(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    url = one_match_database(store / "cfarena.db")
    before = _digests(store)
    with read_only(store):
        standings = run_in_process("standings", "--json", "--db", url, cwd=tmp_path)
        assert standings.returncode == 0, standings.stderr
        assert {row["bot"] for row in json.loads(standings.stdout)} == {"a", "b"}
        matches = run_in_process("matches", "--json", "--db", url, cwd=tmp_path)
        assert [m["id"] for m in json.loads(matches.stdout)] == ["m1"], matches.stderr
        for argv in (["show", "m1"], ["export", "m1"], ["verify", "--all"]):
            result = run_in_process(*argv, "--db", url, cwd=tmp_path)
            assert result.returncode == 0 and result.stderr == "", (argv, result.stderr)
        added = run_in_process("bots", "add", "zed", "--db", url, cwd=tmp_path)
        assert added.returncode == 2
        assert added.stderr.strip().endswith(
            "it is read-only (a read-only mount, or no write permission); commands that only "
            "read it work"), added.stderr
        assert len(added.stderr.strip().splitlines()) == 1
    assert _digests(store) == before  # not a byte written, no -wal or -shm left
