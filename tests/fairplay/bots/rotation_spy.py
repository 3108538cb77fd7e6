"""Hostile bot: tries to learn a duplicate rotation's deal (attack 11 of tests/fairplay).

In a duplicate tournament the rotations of a table replay one deal, so the
hand this bot holds in one rotation is its opponent's hand in the other.
This bot tries to carry it across:

- it records what it observes (match id, seat, its round-0 hand, and the
  MatchEnd as it arrives: which protobuf fields are on the wire, unknown ones
  included, and the SDK's `MatchResult.seed` / `.deals`);
- it writes its hand everywhere it might be able to: /tmp, $HOME, /dev/shm,
  /var/tmp, its own directory, its working directory, next to the referee's
  socket (/run/cfarena) and /run, and it serves it on an abstract Unix socket;
- it signals its hand to any live process of the same bot through `flock`
  locks on files every sandbox can read (the standard library's sources):
  one file per tile, plus a "ready" file;
- at start, at every match start, it looks for what another process left or
  signals: the files, the abstract socket, the lock channel (polled by a
  thread from start until its own match begins).

Every process prints a random nonce and when it started. One `PROBE <name>: <json>` line per
probe; it plays random legal moves.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import random
import secrets
import socket
import threading
import time
from typing import Any

from cfarena.engine.moves import Move
from cfarena.engine.tiles import Tile
from cfarena.sdk import Bot
from cfarena.sdk import client as sdk_client
from cfarena.sdk.convert import match_end_from_proto
from cfarena.sdk.types import MatchInfo, Turn
from cfarena.v1 import arena_pb2 as pb

NONCE = secrets.token_hex(8)
NAME = ".cfarena-spy"
ABSTRACT = "\0cfarena-fairplay-rotation-spy"
MAX_PIPS = 18
LOCK_BITS = (MAX_PIPS + 1) * (MAX_PIPS + 2) // 2  # one per tile of a double-18 set


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


def _err(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, type(exc).__name__)


def spots() -> list[str]:
    here = os.path.dirname(os.path.abspath(__file__))
    home = os.environ.get("HOME", "/tmp")
    dirs = ["/tmp", home, "/dev/shm", "/var/tmp", here, os.getcwd(), "/run/cfarena", "/run"]
    return list(dict.fromkeys(os.path.join(d, NAME) for d in dirs))


# ------------------------------------------------------------------ lock channel
def _lock_files() -> list[str]:
    files: list[str] = []
    for top, dirs, names in os.walk(os.path.dirname(os.__file__)):
        dirs.sort()
        # a file that exists in the sandbox: Debian's stdlib has a sitecustomize.py
        # linking to /etc/python3.11, which the sandbox does not show
        files += [path for path in (os.path.join(top, n) for n in sorted(names)
                                    if n.endswith(".py")) if os.path.isfile(path)]
        if len(files) > LOCK_BITS:
            break
    return files[:LOCK_BITS + 1]


LOCKS = _lock_files()


def _tile_index(tile: Tile) -> int:
    return sum(MAX_PIPS + 1 - i for i in range(tile.a)) + tile.b - tile.a


def _index_tile(index: int) -> str:
    for a in range(MAX_PIPS + 1):
        row = MAX_PIPS + 1 - a
        if index < row:
            return f"{a}-{a + index}"
        index -= row
    raise ValueError(index)


class LockChannel:
    """Bit i held (LOCK_EX) = tile i in the hand; LOCKS[0] held = the bits are set."""

    def __init__(self) -> None:
        self.held: list[int] = []
        self.received: list[str] | None = None
        self.error: str | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._listen, daemon=True)

    def _held_by_other(self, path: str) -> bool:
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops our shared lock
        return False

    def _listen(self) -> None:
        try:
            while not self.stop.is_set():
                if self._held_by_other(LOCKS[0]):
                    time.sleep(0.05)  # let the sender finish
                    bits = [i for i in range(LOCK_BITS) if self._held_by_other(LOCKS[1 + i])]
                    self.received = [_index_tile(i) for i in bits]
                    return
                time.sleep(0.02)
        except OSError as exc:
            self.error = f"{_err(exc)} on the lock files"

    def send(self, hand: tuple[Tile, ...]) -> str:
        self.stop.set()
        self.thread.join(5)
        try:
            for tile in hand:
                fd = os.open(LOCKS[1 + _tile_index(tile)], os.O_RDONLY)
                fcntl.flock(fd, fcntl.LOCK_EX)
                self.held.append(fd)
            fd = os.open(LOCKS[0], os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)
            self.held.append(fd)
        except OSError as exc:
            return _err(exc)
        return f"holding {len(self.held)} locks"


CHANNEL = LockChannel()


# ------------------------------------------------------------- abstract socket
def serve_abstract(payload: bytes) -> str:
    try:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(ABSTRACT)
        server.listen(8)
    except OSError as exc:
        return _err(exc)

    def loop() -> None:
        while True:
            conn, _ = server.accept()
            with conn:
                conn.sendall(payload)

    threading.Thread(target=loop, daemon=True).start()
    return "serving"


def read_abstract() -> str | dict[str, Any]:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            s.connect(ABSTRACT)
            data = s.recv(65536)
    except OSError as exc:
        return _err(exc)
    try:
        found: dict[str, Any] = json.loads(data)
    except ValueError:
        return f"connected; {len(data)} bytes"
    return found


# --------------------------------------------------------------------- looking
def look(phase: str) -> dict[str, Any]:
    """What other processes left: files (not ours), unknown entries, the socket, the locks."""
    found: dict[str, Any] = {}
    for path in spots():
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue
        if data.get("nonce") != NONCE:
            found[path] = data
    strangers: dict[str, list[str]] = {}
    for place in ("/tmp", os.environ.get("HOME", "/tmp"), "/dev/shm", "/var/tmp", "/run"):
        try:
            names = [n for n in os.listdir(place) if n not in (NAME, "cfarena")]
        except OSError:
            continue
        if names:
            strangers[place] = sorted(names)[:20]
    served = read_abstract()
    if isinstance(served, dict) and served.get("nonce") != NONCE:
        found["abstract socket"] = served
    if CHANNEL.received is not None:
        found["lock channel"] = CHANNEL.received
    return {"phase": phase, "nonce": NONCE, "found": found, "other_entries": strangers,
            "abstract_socket": served if not isinstance(served, dict) else "answered",
            "lock_channel": CHANNEL.received, "lock_channel_error": CHANNEL.error}


def persist(record: dict[str, Any]) -> dict[str, str]:
    text = json.dumps(record)
    out: dict[str, str] = {}
    for path in spots():
        try:
            with open(path, "w") as f:
                f.write(text)
            out[path] = "written"
        except OSError as exc:
            out[path] = _err(exc)
    out["abstract socket"] = serve_abstract(text.encode())
    out["lock channel"] = CHANNEL.send(tuple(Tile.parse(t) for t in record["hand"]))
    return out


# ----------------------------------------------------------- the raw MatchEnd
def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def wire_fields(data: bytes) -> list[int]:
    """The top-level field numbers present in a serialized message, unknown ones included."""
    numbers: list[int] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        numbers.append(key >> 3)
        wire = key & 7
        if wire == 0:
            _, i = _varint(data, i)
        elif wire == 1:
            i += 8
        elif wire == 2:
            size, i = _varint(data, i)
            i += size
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
    return sorted(set(numbers))


_original_on_match_end = sdk_client.BotClient._on_match_end


def _spy_on_match_end(self: sdk_client.BotClient, msg: pb.MatchEnd) -> None:
    # here, as the message arrives: the referee may stop the process before later hooks run
    result = match_end_from_proto(msg)
    probe("match-end-wire", {"nonce": NONCE, "fields": wire_fields(msg.SerializeToString()),
                             "known": sorted(f.name for f, _ in msg.ListFields())})
    probe("match-end", {"nonce": NONCE, "seed": getattr(result, "seed", None),
                        "deals": len(getattr(result, "deals", ()) or ()), "reason": result.reason})
    _original_on_match_end(self, msg)


sdk_client.BotClient._on_match_end = _spy_on_match_end  # type: ignore[method-assign]


def process_started() -> float | str:
    """When this process started (wall clock, from /proc: boot time + start ticks)."""
    try:
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, StopIteration, ValueError) as exc:
        return repr(exc)
    return boot + ticks / os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------ bot
probe("nonce", NONCE)
probe("process-start", {"nonce": NONCE, "time": process_started(), "now": time.time()})
probe("leftovers", look("start"))
CHANNEL.thread.start()


class RotationSpyBot(Bot):
    def __init__(self) -> None:
        self.sent = False

    def on_match_start(self, match: MatchInfo) -> None:
        probe("observed", {"nonce": NONCE, "match_id": match.match_id, "seat": match.seat,
                           "seat_names": match.seat_names, "tournament_id": match.tournament_id})
        CHANNEL.stop.set()  # our own match: stop listening (and, below, report)
        CHANNEL.thread.join(5)
        probe("leftovers", look("match"))

    def choose(self, turn: Turn) -> Move:
        if not self.sent and turn.observation.round_index == 0:
            self.sent = True
            hand = [str(t) for t in turn.observation.hand]
            record = {"nonce": NONCE, "match_id": turn.match_id, "seat": turn.seat,
                      "round": 0, "hand": hand}
            probe("hand", record)
            probe("persist", persist(record))
            if CHANNEL.received is not None:
                probe("lock-channel-check", {
                    "received": CHANNEL.received, "my_hand": hand,
                    "disjoint_from_my_hand": not set(CHANNEL.received) & set(hand)})
        return random.choice(turn.legal_moves)
