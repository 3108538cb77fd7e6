"""`cfarena` starts with the garbage collector off and turns it on, with what start-up
made frozen, before a command's work begins: a `serve` or a worker running for hours
collects as any program does."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from .helpers import run_in_process

# runs `cfarena ARGS` as its entry point does (main), and says at exit what the collector
# was like while the command worked (the command left it so) and what start-up froze
PROBE = ("import atexit, gc, sys\n"
         "from cfarena.server.cli import main\n"
         "atexit.register(lambda: print('collector', gc.isenabled(), gc.get_freeze_count(),"
         " file=sys.stderr))\n"
         "sys.argv = ['cfarena', *sys.argv[1:]]\n"
         "main()\n")


def _collector_after(tmp_path: Path, *args: str) -> tuple[bool, int]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                          check=False)
    assert done.returncode == 0, done.stderr
    enabled, frozen = done.stderr.strip().splitlines()[-1].split()[1:]
    return enabled == "True", int(frozen)


def test_a_command_works_with_the_collector_on_and_start_up_frozen(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    # (`tournaments` lists them in its group's own callback)
    for args in (["bots", "add", "someone", "--db", url], ["matches", "--db", url],
                 ["tournaments", "--db", url]):
        enabled, frozen = _collector_after(tmp_path, *args)
        assert enabled, args
        assert frozen > 10_000, args  # the modules' objects, not a handful


def test_in_process_the_collector_is_left_as_it_was(tmp_path: Path) -> None:
    before = gc.get_freeze_count()
    url = f"sqlite:///{tmp_path / 'a.db'}"
    added = run_in_process("bots", "add", "someone", "--db", url, cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    listed = run_in_process("bots", "list", "--db", url, cwd=tmp_path)
    assert listed.returncode == 0 and "someone" in listed.stdout
    assert gc.isenabled()
    assert gc.get_freeze_count() == before
    # a program that turned the collector off itself keeps it off, nothing frozen
    gc.disable()
    try:
        listed = run_in_process("bots", "list", "--db", url, cwd=tmp_path)
        assert listed.returncode == 0 and "someone" in listed.stdout
        assert not gc.isenabled()
        assert gc.get_freeze_count() == before
    finally:
        gc.enable()
