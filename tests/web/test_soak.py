"""`cfarena serve` with its web page holds steady memory over many matches (issue 21):
the short version of benchmarks/soak.py.

A real serve (--http-port, SQLite) with four dial-in SDK bots plays short 2-player
matches while a browser-like spectator watches: /api/events, every match's live
stream, /api/matches/ID when one starts, the leaderboard, the match page, its replay
and log and one of its bots' pages when one is stored. serve's RSS is sampled with
the count of ended matches; after a warm-up (imports, caches and the allocator's
first pools) the growth per match is the slope of a least-squares line through the
samples. The audit that filed the issue measured 600-1000 KiB per match (bot pages
decoding 200 whole game logs at once); serve now shows 20-50 KiB/match over these
first matches on a loaded 2-core machine (the allocator's first pools, SQLite's page
caches filling to their size; over a thousand matches it levels off to a few KiB per
match, benchmarks/soak.py, docs/OPERATIONS.md), so the limit, 150 KiB/match, is
three times that and a quarter of the audit's growth.

80 matches are measured, not 150 (the suite's CPU): their slope is the first half of
150's, 30-37 KiB/match in three soaks as the test runs them (the whole 150: 19-26),
four times under the limit, and the audit's growth is four times over it. RSS is
sampled every 0.1 s: the 20 samples the slope needs at least come in 2 s of play, so a
machine twice as fast as this one (7.5 matches/s) has them too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.soak import run_soak

WARMUP = 40
MATCHES = 80
MAX_KIB_PER_MATCH = 150.0


@pytest.mark.long
def test_serve_with_viewers_does_not_grow_per_match(tmp_path: Path) -> None:
    soak = run_soak(tmp_path, matches=MATCHES, warmup=WARMUP, players=2, bots=4,
                    concurrency=4, rounds=1, viewers=True, every=0.1, timeout_s=240)
    assert soak.matches >= MATCHES
    assert soak.viewed >= MATCHES  # the spectator watched every match live
    assert not soak.errors, soak.errors[:5]
    assert len(soak.samples) >= 20, soak.samples
    growth = soak.kib_per_match
    assert growth < MAX_KIB_PER_MATCH, (
        f"serve grew {growth:.0f} KiB per match over {soak.matches} matches "
        f"({soak.rss_start_kib / 1024:.1f} -> {soak.rss_end_kib / 1024:.1f} MiB)")
