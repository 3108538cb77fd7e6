#!/usr/bin/env python3
"""What the host's inode counter carries across a phase reset, end to end.

Runs real sandboxed `cfarena run-tournament`s (2 players, one deal, so two phases:
rotation 0, the reset, rotation 1) with the hostile bot
`tests/fairplay/bots/inode_counter.py` against `random`. In rotation 0 it leaves a
value derived from its hand as the counter's residue modulo `--modulus`; in
rotation 1 its next process reads the counter. The drift (read - written) is
everything else the machine did in between, the phase change among it.

For each step size Q (a power of two) it prints how often a reader would decode a
value written with that step right, correcting by the median drift of the OTHER
runs (what an attacker would calibrate on runs of its own): when the drift is
within Q / 2 of it. Such a value has log2(modulus / Q) bits; the last column is
for a writer that spends a whole match creating pipes (~2^21 of them: ~20 s of a
bot's CPU, spread over its turns). Then, per CPU, how far its current batch of
1,024 numbers moved between the write and the read: where it did not move, a
writer could leave 10 more bits in it.

    python benchmarks/inode_channel.py [--runs 12] [--modulus 262144] [--cfarena PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BOT = Path(__file__).resolve().parents[1] / "tests" / "fairplay" / "bots" / "inode_counter.py"
PROBE = re.compile(r"^PROBE (\w+): (.*)$", re.M)


def probes(path: Path) -> dict[str, dict[str, Any]]:
    return {name: json.loads(body) for name, body in PROBE.findall(path.read_text())}


def one_run(cfarena: str, modulus: int, levels: int, work: Path
            ) -> tuple[int, int, float, dict[str, int]]:
    """(written counter, read counter, seconds between write and read, and per CPU how
    far its current batch moved between them) of one run."""
    evil = "evil=" + shlex.join(["python", "-m", "cfarena.sdk", "run", str(BOT),
                                 f"--name=inode-{modulus}-{levels}"])
    logs = work / "logs"
    subprocess.run([cfarena, "run-tournament", "--bot", evil, "--bot", "random",
                    "--players", "2", "--games", "1", "--rule", "rounds=1",
                    "--db", f"sqlite:///{work / 'cfarena.db'}", "--log-dir", str(logs),
                    "--timeout-ms", "60000"], check=True, capture_output=True, cwd=work)
    wrote = probes(logs / "t0-g0-r0-seat0-evil.log")["wrote"]
    read = probes(logs / "t0-g0-r1-seat1-evil.log")["read"]
    moved = {cpu: read["cpus"][cpu] - wrote["cpus"][cpu] for cpu in wrote["cpus"]}
    return wrote["counter"], read["counter"], read["at"] - wrote["at"], moved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--modulus", type=int, default=1 << 18)
    parser.add_argument("--cfarena", default=shutil.which("cfarena") or "cfarena")
    args = parser.parse_args()
    levels = 64
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="cfarena-inode-") as tmp:
            started = time.monotonic()
            runs.append(one_run(args.cfarena, args.modulus, levels, Path(tmp)))
        w, r, gap, moved = runs[-1]
        print(f"run {i + 1}: drift {r - w:>7} over {gap:.2f} s, CPUs' batches moved "
              f"{' '.join(f'{n:>6}' for n in moved.values())} "
              f"(tournament {time.monotonic() - started:.1f} s)", flush=True)
    drifts = [r - w for w, r, _, _ in runs]
    print(f"\ndrift over {len(runs)} phase changes: median {statistics.median(drifts):.0f}, "
          f"min {min(drifts)}, max {max(drifts)}, spread {max(drifts) - min(drifts)}")
    print(f"{'step Q':>8} {'decoded':>9} {'bits (modulus)':>15} {'bits (2^21 pipes)':>18}")
    # a writer with step Q leaves log2(modulus / Q) bits; the reader decodes them right
    # when the drift, less the median of the other runs' drifts, is within Q / 2
    step = 256
    while step <= args.modulus // 2:
        right = sum(abs(d - statistics.median(drifts[:i] + drifts[i + 1:] or drifts)) < step / 2
                    for i, d in enumerate(drifts))
        print(f"{step:>8} {right:>4}/{len(runs):<4} {math.log2(args.modulus / step):>15.1f} "
              f"{math.log2((1 << 21) / step):>18.1f}")
        step *= 2
    # what is left in each CPU's current batch: the writer leaves it somewhere in 1,024
    # numbers; if nothing else on that CPU takes a number, the next phase reads it there
    for cpu in runs[0][3]:
        steps = [m[cpu] for _, _, _, m in runs]
        print(f"CPU {cpu}: its batch moved {statistics.median(steps):.0f} numbers (median), "
              f"not at all in {steps.count(0)}/{len(runs)} runs")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
