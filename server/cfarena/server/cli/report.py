"""Standings as tables: the rows of `cfarena.server.standings` (the order-free
Bradley-Terry estimate per bot; the head-to-head matrix; the ladder's online rating per
bot version)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table


def standings_table(rows: list[dict[str, Any]], title: str) -> Table:
    """One rating per bot, the Bradley-Terry fit with its interval (the sequential Elo,
    which depends on match order and can contradict it, is left to --json); in a
    gauntlet, NEW's head-to-head Elo difference with each opponent."""
    new = next((r["gauntlet"]["new"] for r in rows if r.get("gauntlet")), None)
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("bot", overflow="fold",  # a long name wraps, never cut
                     min_width=min(16, max((len(r["bot"]) for r in rows), default=3)))
    table.add_column("rating (95% CI)", justify="right", no_wrap=True)
    if new is not None:
        table.add_column(f"{new} vs it", justify="right", no_wrap=True)
    table.add_column("games", justify="right")
    table.add_column("wins", justify="right")
    table.add_column("pts/rnd", justify="right")
    table.add_column("faults", justify="right")
    for i, r in enumerate(rows, 1):
        rating = (
            f"{r['bt_elo']:.0f} ({r['ci_low']:.0f}-{r['ci_high']:.0f})"
            if r["bt_elo"] is not None
            else "-"
        )
        against = [] if new is None else [
            "-" if not r.get("gauntlet") else elo_with_interval(r["gauntlet"])]
        mean = "-" if r["mean_score"] is None else f"{r['mean_score']:.1f}"
        faults = str(r["faults"]) + (f" ({r['forfeits']} forfeits)" if r["forfeits"] else "")
        table.add_row(str(i), r["bot"], rating, *against, str(r["matches"]),
                      str(r["wins"]), mean, faults)
    table.caption = (
        "rating: Bradley-Terry fit over all results (order-free), bootstrap 95% CI; "
        "pts/round: lower is better"
        + (f"; {new} vs it: {new}'s Elo difference over the bot [95% CI] from their "
           "results against each other, per deal" if new is not None else "")
    )
    table.caption_justify = "left"
    return table


def elo_with_interval(cell: dict[str, Any]) -> str:
    """A head-to-head cell's Elo difference and interval: "+85 [+20, +150]"; an open
    end (a score of 0 or 1) shows as -inf or +inf."""
    def elo(value: float | None, open_end: str) -> str:
        return open_end if value is None else f"{value:+.0f}"
    return (f"{elo(cell['elo'], '+inf' if cell['score'] >= 0.5 else '-inf')} "
            f"[{elo(cell['elo_low'], '-inf')}, {elo(cell['elo_high'], '+inf')}]")


def matrix_table(matrix: dict[str, Any], title: str) -> Table:
    """The head-to-head matrix: row bot against column bot, its Elo difference with
    the 95% interval and the matches where both sat."""
    table = Table(title=title, title_justify="left", show_lines=True)
    table.add_column("row vs column", overflow="fold")
    for bot in matrix["bots"]:
        table.add_column(bot, justify="right", overflow="fold")
    for bot, cells in zip(matrix["bots"], matrix["rows"], strict=True):
        table.add_row(bot, *(
            "" if cell is None else
            f"{elo_with_interval(cell)}\n{cell['score']:.2f}, {cell['matches']} matches"
            for cell in cells))
    table.caption = (
        "each cell: the row bot's Elo difference over the column bot [95% CI], its mean "
        "score against it (0.50: even) and the matches where both sat; from their pairwise "
        "results per deal (a deal's rotations are one piece of evidence)")
    table.caption_justify = "left"
    return table


def ladder_table(rows: list[dict[str, Any]], title: str) -> Table:
    """The ladder as the web page's leaderboard shows it (`standings.ladder_board`'s
    rows, in their order): the rating that ranks it, the Bradley-Terry check as a
    place, results, faults and when each bot was last seen; its latest faults under
    the table."""
    # light rules and no outer padding: the ten columns fit in 80
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  show_edge=False, collapse_padding=True)
    table.add_column("#", justify="right")
    table.add_column("bot", overflow="fold",  # a long name wraps, never cut
                     min_width=min(10, max((len(r["bot"]) for r in rows), default=3)))
    table.add_column("version", overflow="fold")
    table.add_column("rating", justify="right", style="bold")
    table.add_column("check", justify="right")
    table.add_column("games", justify="right")
    table.add_column("wins", justify="right")
    table.add_column("pts/rnd", justify="right")
    table.add_column("faults", justify="right")
    table.add_column("last seen", overflow="fold", min_width=10)
    errors = []
    for r in rows:
        version = r["version"] or "-"
        if r["versions"] > 1:
            version += f" (of {r['versions']})"
        win = "-" if r["win_share"] is None else f"{100 * r['win_share']:.0f}%"
        mean = "-" if r["points_per_round"] is None else f"{r['points_per_round']:.1f}"
        seen = "revoked" if r["revoked"] else _time(r["last_seen"]).replace(" ", "\n")
        table.add_row("-" if r["rank"] is None else str(r["rank"]), r["bot"], version,
                      "new" if r["rating"] is None else str(r["rating"]),
                      "-" if r["check_rank"] is None else f"#{r['check_rank']}",
                      str(r["games"]), win, mean, str(r["faults"]), seen)
        if r["last_error"]:
            e = r["last_error"]
            errors.append(f"{r['bot']}: {e['kind']} at {_time(e['at'])}, match {e['match']}")
    table.caption = (
        "rating (ranks the table): the online Weng-Lin rating of the bot's latest version, "
        "Elo-like, 1500 + 29.5 (mu - 3 sigma), a new bot 1500; check: its place by the "
        "order-free Bradley-Terry fit of the same results (own scale, in --json); wins: "
        "share of its matches won; last seen: the end of its latest ladder match (UTC)"
        + "".join(f"\nlast error of {line}" for line in errors))
    table.caption_justify = "left"
    return table


def _time(iso: str | None) -> str:
    """An ISO 8601 UTC time as "2026-12-06 18:04:02" ("-" for none)."""
    return "-" if not iso else iso.replace("T", " ").removesuffix("+00:00")
