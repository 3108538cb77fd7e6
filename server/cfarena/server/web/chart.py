"""The rating chart: an inline SVG drawn on the server (no JavaScript, no chart
library: a polyline, its axis labels and a title per point is all it takes)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

# a narrow viewBox: the labels stay readable when a phone scales the chart down
WIDTH, HEIGHT = 480, 220
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 50, 10, 12, 30


def _ticks(low: float, high: float, count: int = 4) -> list[float]:
    """Round tick values covering low..high."""
    span = max(high - low, 1.0)
    raw = span / count
    step = 10 ** math.floor(math.log10(raw))
    for nice in (1, 2, 5, 10):
        if raw <= nice * step:
            step *= nice
            break
    first = math.floor(low / step) * step
    return [first + i * step for i in range(int((high - first) / step) + 2)]


def rating_chart(ratings: Sequence[float], labels: Sequence[str] = (),
                 title: str = "rating after each match", *, unit: str = "match",
                 levels: Sequence[float] = (), digits: int = 0,
                 marks: Sequence[tuple[int, str]] = ()) -> str:
    """An `<svg>` of `ratings` (one point per `unit`, oldest first); `labels[i]` is the
    tooltip of point i, its value shown with `digits` decimals; `levels` are drawn as
    horizontal lines (a test's bounds). Each mark (i, text) starts a new series at
    point i (a new version's rating): a labelled vertical line, and the line is not
    drawn across it. An empty series is a chart saying so."""
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'role="img" aria-label="{html.escape(title)}" class="chart" '
            f'data-points="{len(ratings)}">')
    if not ratings:
        return (head + f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" '
                f'class="chart-empty">no rated {unit} yet</text></svg>')
    ticks = _ticks(min([*ratings, *levels]), max([*ratings, *levels]))
    low, high = ticks[0], ticks[-1]
    plot_w = WIDTH - PAD_LEFT - PAD_RIGHT
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    n = len(ratings)

    def x(i: int) -> float:
        return PAD_LEFT + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    def y(v: float) -> float:
        return PAD_TOP + plot_h * (1 - (v - low) / (high - low))

    parts = [head]
    for t in ticks:
        parts.append(f'<line class="grid" x1="{PAD_LEFT}" x2="{WIDTH - PAD_RIGHT}" '
                     f'y1="{y(t):.1f}" y2="{y(t):.1f}"/>'
                     f'<text class="axis" x="{PAD_LEFT - 6}" y="{y(t) + 4:.1f}" '
                     f'text-anchor="end">{t:g}</text>')
    for level in levels:
        parts.append(f'<line class="level" x1="{PAD_LEFT}" x2="{WIDTH - PAD_RIGHT}" '
                     f'y1="{y(level):.1f}" y2="{y(level):.1f}"/>')
    parts.append(f'<text class="axis" x="{PAD_LEFT}" y="{HEIGHT - 8}">{unit} 1</text>'
                 f'<text class="axis" x="{WIDTH - PAD_RIGHT}" y="{HEIGHT - 8}" '
                 f'text-anchor="end">{unit} {n}</text>')
    starts = sorted({i for i, _ in marks if 0 < i < n})
    for i, text in marks:
        if 0 <= i < n:
            anchor = "end" if i > n / 2 else "start"
            shift = -4 if anchor == "end" else 4
            parts.append(f'<line class="mark" x1="{x(i) - 0.5:.1f}" x2="{x(i) - 0.5:.1f}" '
                         f'y1="{PAD_TOP}" y2="{HEIGHT - PAD_BOTTOM}"/>'
                         f'<text class="mark-label" x="{x(i) + shift:.1f}" y="{PAD_TOP + 10}" '
                         f'text-anchor="{anchor}">{html.escape(text)}</text>')
    for first, end in zip([0, *starts], [*starts, n], strict=True):
        points = " ".join(f"{x(i):.1f},{y(ratings[i]):.1f}" for i in range(first, end))
        parts.append(f'<polyline class="line" fill="none" points="{points}"/>')
    if n <= 200:  # a dot (with its tooltip) per match while they can be told apart
        for i, v in enumerate(ratings):
            label = labels[i] if i < len(labels) else f"{unit} {i + 1}"
            parts.append(f'<circle class="dot" cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.5">'
                         f"<title>{html.escape(label)}: {v:.{digits}f}</title></circle>")
    parts.append("</svg>")
    return "".join(parts)
