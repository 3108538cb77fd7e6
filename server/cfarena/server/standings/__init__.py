"""Standings: the rows every report shows, computed from storage and the ratings.

The CLI (`cfarena standings`, `bots show`, `run-tournament`'s table) and the web pages
(leaderboard, bot page, tournament page) only render these rows. One row is a dict of
JSON values, rounded as shown:

- `table.standings_rows`: per bot, a tournament's or a pool's Bradley-Terry fit with
  its 95% interval, matches, wins, points per round, faults, in a gauntlet NEW's
  head-to-head result against it (and the sequential Elo, for scripts);
  `table.leader`: its first row, for `run-tournament`'s progress line;
- `head_to_head.head_to_head_matrix`: every pair's results against each other
  (score, Elo difference with its 95% interval, matches), row bot against column bot;
- `ladder.ladder_rows`: `serve`'s ladder, the online rating per bot version;
  `ladder.leaderboard_rows`: the same as the leaderboard and `cfarena standings`
  show it (rank, the rating it is ranked by, the check's rank, each bot's results and
  activity), `ladder.with_presence` adding who is connected or revoked, and
  `ladder.ladder_board` both as storage knows them;
- `bot.bot_report`: what a bot's owner may see (versions, faults, decision times);
  `bot.rating_history`: its online rating after each rated match, as stored.

It imports storage and the rating code only, never the CLI or the web.
"""

from __future__ import annotations

from cfarena.server.standings.bot import bot_report, rated_games, rating_history
from cfarena.server.standings.head_to_head import head_to_head_matrix
from cfarena.server.standings.ladder import (
    ladder_board,
    ladder_rows,
    leaderboard_rows,
    with_presence,
)
from cfarena.server.standings.table import leader, standings_rows

__all__ = ["bot_report", "head_to_head_matrix", "ladder_board", "ladder_rows",
           "leader", "leaderboard_rows", "rated_games", "rating_history", "standings_rows",
           "with_presence"]
