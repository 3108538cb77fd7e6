"""Hostile bot: carries a number across a phase reset in the host's inode counter.

The inode numbers of new pipes and sockets come from one counter of the whole
machine (the kernel's `get_next_ino`, handed to each CPU in batches of 1,024),
and `fstat` shows them. Nothing resets it between phases, and no file is needed:

- reading: pinned to each CPU in turn, the bot creates pipes until the CPU takes a
  new batch (the number jumps); the largest batch start seen is the counter's value;
- writing (the first rotation, seat 0 of a 2-player table): a value v below the
  number of levels is left as the counter's residue modulo a modulus: pipes are created
  until the counter reaches the next number that is v * step modulo the modulus
  (`--name=inode-MODULUS-LEVELS`; 2^18 and 64 levels by default).

The next phase's reader decodes ((counter - drift) mod modulus) // step; how far the
counter moved between the write and the read (the drift: everything else the machine
did, the phase change among it) decides what survives. `benchmarks/inode_channel.py`
measures that drift in real tournaments.

It prints `PROBE read: {...}` and `PROBE wrote: {...}` lines and plays random legal moves.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import time

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import Turn


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


def options() -> tuple[int, int]:
    """(modulus, levels) from `--name=inode-MODULUS-LEVELS` (the SDK's one free option)."""
    for arg in sys.argv:
        if arg.startswith("--name=inode-"):
            modulus, levels = arg.removeprefix("--name=inode-").split("-")
            return int(modulus), int(levels)
    return 1 << 18, 64


def new_ino() -> int:
    r, w = os.pipe()
    try:
        return os.fstat(r).st_ino
    finally:
        os.close(r)
        os.close(w)


def batch_start() -> int:
    """The first number of a fresh batch on the CPU this process runs on."""
    last = new_ino()
    for _ in range(2100):
        ino = new_ino()
        if ino != last + 1:
            return ino
        last = ino
    return last


def read_counter() -> tuple[dict[str, int], dict[str, int]]:
    """Per CPU this process may use: the next number of the CPU's current batch (where
    the last process on that CPU left it), then the start of a fresh batch (the
    counter shared by every CPU: its largest is the counter's value)."""
    cpus = sorted(os.sched_getaffinity(0))
    current, fresh = {}, {}
    try:
        for cpu in cpus:
            os.sched_setaffinity(0, {cpu})
            current[str(cpu)] = new_ino()
            fresh[str(cpu)] = batch_start()
    finally:
        os.sched_setaffinity(0, set(cpus))
    return current, fresh


def positions() -> dict[str, int]:
    """The next number of each CPU's current batch."""
    cpus = sorted(os.sched_getaffinity(0))
    try:
        found = {}
        for cpu in cpus:
            os.sched_setaffinity(0, {cpu})
            found[str(cpu)] = new_ino()
        return found
    finally:
        os.sched_setaffinity(0, set(cpus))


def write_counter(value: int, step: int, modulus: int) -> int:
    """Advance the counter to the next number congruent to value * step modulo modulus."""
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[0]})
    try:
        now = new_ino()
        target = now + (value * step - now) % modulus
        while now < target:
            now = new_ino()
        return now
    finally:
        os.sched_setaffinity(0, set(cpus))


class InodeCounterCarrier(Bot):
    def __init__(self) -> None:
        self.done = False

    def choose(self, turn: Turn) -> Move:
        if not self.done:
            self.done = True
            self.carry(turn)
        return random.choice(turn.legal_moves)

    def carry(self, turn: Turn) -> None:
        modulus, levels = options()
        step = modulus // levels
        hand = sorted(str(t) for t in turn.hand)
        value = int.from_bytes(hashlib.sha256(",".join(hand).encode()).digest()[:4]) % levels
        started = time.perf_counter()
        current, fresh = read_counter()
        probe("read", {"counter": max(fresh.values()), "cpus": current,
                       "seat": turn.observation.seat,
                       "seconds": round(time.perf_counter() - started, 4),
                       "at": time.time()})
        if turn.observation.seat == 0:
            started = time.perf_counter()
            left = write_counter(value, step, modulus)
            probe("wrote", {"counter": left, "cpus": positions(), "value": value, "step": step,
                            "modulus": modulus,
                            "hand": hand, "seconds": round(time.perf_counter() - started, 4),
                            "at": time.time()})
