"""Server-rendered SVG charts: geometry computed here, drawn by templates/web/_chart.html with
classes only (the CSP allows no inline style). 30 days, one bar per day, plus an optional line."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

WIDTH = 600
HEIGHT = 150
PAD_LEFT = 40
PAD_BOTTOM = 22
PAD_TOP = 16


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str  # tooltip: "2026-11-30: 4"


@dataclass
class Chart:
    title: str
    bars: list[Bar]
    line: str = ""  # SVG points of the cumulative line, empty for none
    y_max: int = 0
    line_max: int = 0
    x_labels: list[tuple[float, str]] = field(default_factory=list)
    total: int = 0
    width: int = WIDTH
    height: int = HEIGHT
    plot_left: int = PAD_LEFT
    plot_bottom: int = HEIGHT - PAD_BOTTOM
    label_y: int = HEIGHT - 4


def days_back(today: date, n: int = 30) -> list[date]:
    return [today - timedelta(days=n - 1 - i) for i in range(n)]


def daily_chart(
    title: str, days: list[date], counts: dict[date, int], *, cumulative_from: int | None = None
) -> Chart:
    """Bars of `counts` per day; with `cumulative_from`, also a line of the running total."""
    values = [counts.get(day, 0) for day in days]
    y_max = max([*values, 1])
    plot_w = WIDTH - PAD_LEFT - 4
    plot_h = HEIGHT - PAD_BOTTOM - PAD_TOP
    step = plot_w / len(days)
    bars = []
    for i, (day, value) in enumerate(zip(days, values, strict=True)):
        height = plot_h * value / y_max
        bars.append(
            Bar(
                x=round(PAD_LEFT + i * step + 1, 1),
                y=round(HEIGHT - PAD_BOTTOM - height, 1),
                width=round(max(step - 2, 1), 1),
                height=round(height, 1),
                label=f"{day.isoformat()}: {value}",
            )
        )
    chart = Chart(title=title, bars=bars, y_max=y_max, total=sum(values))
    if cumulative_from is not None:
        running = cumulative_from
        totals = []
        for value in values:
            running += value
            totals.append(running)
        low, high = min(totals), max(totals)
        span = max(high - low, 1)
        chart.line = " ".join(
            f"{round(PAD_LEFT + (i + 0.5) * step, 1)},"
            f"{round(HEIGHT - PAD_BOTTOM - plot_h * (t - low) / span * 0.9 - plot_h * 0.05, 1)}"
            for i, t in enumerate(totals)
        )
        chart.line_max = high
    chart.x_labels = [
        (round(PAD_LEFT + (i + 0.5) * step, 1), days[i].strftime("%m-%d"))
        for i in range(0, len(days), 7)
    ]
    return chart
