"""`cfarena` starts with the garbage collector off and turns it on, with what start-up
made frozen, before a command's work begins: a `serve` or a worker running for hours
collects as any program does."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from .helpers import main_reports, run_in_process


def _collector_after(tmp_path: Path, *args: str) -> tuple[bool, int]:
    """Whether the collector was on once `cfarena ARGS` had worked (the command left it
    so), and how many objects start-up froze."""
    _shown, report = main_reports("(gc.isenabled(), gc.get_freeze_count())", *args,
                                  cwd=tmp_path)
    enabled, frozen = report.strip("()").split(", ")
    return enabled == "True", int(frozen)


def test_a_command_works_with_the_collector_on_and_start_up_frozen(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    # (`tournaments` lists them in its group's own callback)
    for args in (["bots", "add", "someone", "--db", url], ["matches", "--db", url],
                 ["tournaments", "--db", url]):
        enabled, frozen = _collector_after(tmp_path, *args)
        assert enabled, args
        assert frozen > 10_000, args  # the modules' objects, not a handful


@pytest.mark.usefixtures("unfrozen_heap")
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
