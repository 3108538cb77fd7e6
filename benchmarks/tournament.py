#!/usr/bin/env python3
"""Wall time of tournaments through the real CLI (`cfarena run-tournament`).

1. the default run (no options: four bundled bots, standard, 4-player tables);
2. a 6-bot round-robin at 4-player tables (15 tables x 4 rotations = 60 matches),
   the four bundled bots plus a second random and a second greedy.

    python benchmarks/tournament.py [--skip-six]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CFARENA = shutil.which("cfarena") or str(Path(sys.executable).with_name("cfarena"))
SDK = f"{sys.executable} -m cfarena.sdk run"


def timed(args: list[str]) -> tuple[float, dict[str, object]]:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        result = subprocess.run([CFARENA, *args, "--json"], cwd=tmp, capture_output=True,
                                text=True, check=False)
        wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"cfarena failed ({result.returncode}): {result.stderr[-2000:]}")
    return wall, json.loads(result.stdout)


def show(title: str, wall: float, data: dict[str, object]) -> None:
    print(f"{title}: {data['matches']} matches in {wall:.1f} s wall "
          f"({float(data['matches']) / wall:.2f} matches/s, incl. start-up)")  # type: ignore[arg-type]
    for row in data["standings"]:  # type: ignore[attr-defined]
        print(f"    {row['bot']:<11} rating {row['bt_elo']:>6} [{row['ci_low']}, {row['ci_high']}]"
              f"  pts/round {row['mean_score']}  faults {row['faults']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--skip-six", action="store_true")
    ns = ap.parse_args()
    wall, data = timed(["run-tournament"])
    show("default run", wall, data)
    if not ns.skip_six:
        bots = ["random", "greedy", "smart", "montecarlo",
                f"random2={SDK} cfarena.bots.random_bot", f"greedy2={SDK} cfarena.bots.greedy"]
        args = ["run-tournament", "--games", "1"]
        for b in bots:
            args += ["--bot", b]
        wall, data = timed(args)
        show("6 bots, 4-player tables", wall, data)


if __name__ == "__main__":
    main()
