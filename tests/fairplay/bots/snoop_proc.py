"""Hostile bot: snoops on other processes through /proc (attacks 1 and 3 of tests/fairplay).

At start and again when its match has begun (the opponent's process is live
then), it lists every visible process, reads each one's command line and
environment looking for CFARENA_TOKEN values other than its own and for the
referee, then tries to read the memory and environment of PID 1 and of its
parent and to ptrace-attach to them. One `PROBE <name>: <json>` line per probe
(tokens are reported as counts and hash prefixes, never in clear), then it
plays random legal moves.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import random

from cfarena.engine.moves import Move
from cfarena.sdk import Bot
from cfarena.sdk.types import MatchInfo, Turn

OWN_TOKEN = os.environ.get("CFARENA_TOKEN", "")
REFEREE_COMMANDS = ("run-tournament", "serve")  # `cfarena run-tournament ...`


def probe(name: str, outcome: object) -> None:
    print(f"PROBE {name}: {json.dumps(outcome, sort_keys=True, default=str)}", flush=True)


def _err(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, type(exc).__name__)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:12]


def _read(path: str, limit: int = 1 << 20) -> bytes | str:
    """The file's bytes, or the errno name it failed with."""
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError as exc:
        return _err(exc)


def scan(phase: str) -> None:
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    cmdlines: dict[int, list[str] | str] = {}
    readable: list[int] = []
    denied: dict[int, str] = {}
    tokens: dict[str, list[int]] = {}
    referee: list[int] = []
    for pid in pids:
        raw = _read(f"/proc/{pid}/cmdline")
        argv = raw if isinstance(raw, str) else \
            [a.decode(errors="replace") for a in raw.split(b"\0") if a]
        cmdlines[pid] = argv
        if isinstance(argv, list) and any(a in REFEREE_COMMANDS for a in argv[1:3]) \
                and any(os.path.basename(a) == "cfarena" for a in argv[:2]):
            referee.append(pid)
        env = _read(f"/proc/{pid}/environ")
        if isinstance(env, str):
            denied[pid] = env
            continue
        readable.append(pid)
        for item in env.split(b"\0"):
            if item.startswith(b"CFARENA_TOKEN="):
                value = item.split(b"=", 1)[1].decode(errors="replace")
                tokens.setdefault(value, []).append(pid)
        for arg in argv if isinstance(argv, list) else []:
            if arg.startswith("--token="):
                tokens.setdefault(arg.split("=", 1)[1], []).append(pid)
    foreign = {_digest(t): where for t, where in tokens.items() if t != OWN_TOKEN}
    pid1 = cmdlines.get(1)
    probe("proc-visible", {
        "phase": phase, "self": os.getpid(), "pids": pids, "uid": os.getuid(),
        "pid1": pid1[0] if isinstance(pid1, list) and pid1 else pid1,
        "cmdlines": {pid: (a[:4] if isinstance(a, list) else a) for pid, a in cmdlines.items()}
        if len(pids) < 50 else f"{len(pids)} processes",
    })
    probe("proc-environ", {
        "phase": phase, "readable": readable if len(readable) < 50 else len(readable),
        "denied": denied if len(denied) < 50 else len(denied),
        "own_token_in": tokens.get(OWN_TOKEN, []),
        "foreign_tokens": len(foreign),
        "foreign_token_digests": dict(list(foreign.items())[:10]),
    })
    probe("proc-referee", {"phase": phase, "visible": bool(referee),
                           "pids": referee[:10],
                           "cmdlines": [cmdlines[p][:6] for p in referee[:3]]})


def _ptrace_seize(pid: int) -> str:
    """PTRACE_SEIZE (does not stop the target), then detach: only the permission is tested."""
    libc = ctypes.CDLL(None, use_errno=True)
    ptrace_seize, ptrace_detach = 0x4206, 17
    if libc.ptrace(ptrace_seize, pid, None, None) == 0:
        libc.ptrace(ptrace_detach, pid, None, None)
        return "SEIZED"
    return errno.errorcode.get(ctypes.get_errno(), "error")


def _read_mem(pid: int) -> str:
    """Open /proc/PID/mem and read a mapped page (an open alone can succeed on some kernels)."""
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError as exc:
        return f"open: {_err(exc)}"
    try:
        maps = _read(f"/proc/{pid}/maps")
        if isinstance(maps, str) or not maps.strip():
            return f"opened; maps: {maps if isinstance(maps, str) else 'empty'}"
        start = int(maps.split(b"-", 1)[0], 16)
        data = os.pread(fd, 64, start)
        return f"READ {len(data)} bytes"
    except OSError as exc:
        return f"opened; read: {_err(exc)}"
    finally:
        os.close(fd)


def poke(phase: str) -> None:
    ppid = os.getppid()
    targets = sorted({1, ppid})
    out: dict[str, object] = {"phase": phase, "ppid": ppid}
    pid1 = _read("/proc/1/cmdline")
    in_sandbox = not isinstance(pid1, str) and os.path.basename(pid1.split(b"\0")[0]) == b"bwrap"
    for pid in targets:
        cmd = _read(f"/proc/{pid}/cmdline")
        out[f"{pid}/cmdline0"] = cmd if isinstance(cmd, str) else \
            cmd.split(b"\0")[0].decode(errors="replace")
        out[f"{pid}/mem"] = _read_mem(pid)
        env = _read(f"/proc/{pid}/environ")
        out[f"{pid}/environ"] = env if isinstance(env, str) else f"READ {len(env)} bytes"
        try:
            out[f"{pid}/root"] = f"LISTED {len(os.listdir(f'/proc/{pid}/root'))} entries"
        except OSError as exc:
            out[f"{pid}/root"] = _err(exc)
        # never ptrace a real machine's init (the unsandboxed control run): only a sandbox's
        out[f"{pid}/ptrace"] = _ptrace_seize(pid) if in_sandbox else "skipped: not sandboxed"
    probe("proc-mem", out)


scan("start")
poke("start")


class SnoopProcBot(Bot):
    def on_match_start(self, match: MatchInfo) -> None:
        scan("match")
        poke("match")

    def choose(self, turn: Turn) -> Move:
        return random.choice(turn.legal_moves)
