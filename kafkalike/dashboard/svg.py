"""Line plots drawn on the server as inline SVG: the page needs no script and no plotting library."""
from __future__ import annotations

import math
import time
from html import escape

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 64, 170, 14, 30


def nice_ceiling(value: float) -> float:
    """The axis top: 1, 2 or 5 times a power of ten, at least the value (and at least 1)."""
    if value <= 1:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return float(step * power)
    return float(10 * power)


def human(value: float) -> str:
    """12, 3.5, 1.2k, 45M: short numbers for axes and legends."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.3g}{unit}"
    return f"{value:.3g}" if value else "0"


def line_plot(title: str, unit: str, series: dict[str, list[tuple[float, float]]], window: float,
              now: float | None = None) -> str:
    """An SVG of each series' (time, value) points over the last `window` seconds."""
    now = time.time() if now is None else now
    start = now - window
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top = nice_ceiling(max((v for points in series.values() for _, v in points), default=0.0))

    def x(t: float) -> float:
        return LEFT + max(0.0, min(1.0, (t - start) / window)) * plot_w

    def y(v: float) -> float:
        return TOP + plot_h - (v / top) * plot_h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">',
             f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#ccc"/>']
    for i in range(5):
        value = top * i / 4
        yy = y(value)
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#e4e4e4"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{yy + 4:.1f}" text-anchor="end" font-size="11">{human(value)}</text>')
    minutes = max(1, int(window // 60))
    step = 1 if minutes <= 10 else 5
    for m in range(0, minutes + 1, step):
        xx = x(now - m * 60)
        parts.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{TOP + plot_h}" y2="{TOP + plot_h + 4}" stroke="#999"/>')
        label = "now" if m == 0 else f"-{m}m"
        parts.append(f'<text x="{xx:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle" font-size="11">{label}</text>')
    parts.append(f'<text x="{LEFT}" y="{HEIGHT - 2}" font-size="11" fill="#555">{escape(unit)}</text>')
    for i, (label, points) in enumerate(sorted(series.items())):
        color = COLORS[i % len(COLORS)]
        shown = [(t, v) for t, v in points if t >= start]
        if len(shown) >= 2:
            path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in shown)
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        elif shown:
            t, v = shown[0]
            parts.append(f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="3" fill="{color}"/>')
        if i < 12:
            ly = TOP + 12 + i * 16
            last = human(shown[-1][1]) if shown else "-"
            parts.append(f'<rect x="{LEFT + plot_w + 10}" y="{ly - 9}" width="10" height="10" fill="{color}"/>')
            parts.append(f'<text x="{LEFT + plot_w + 24}" y="{ly}" font-size="11">'
                         f'{escape(_short(label))} {last}</text>')
    if not series:
        parts.append(f'<text x="{LEFT + plot_w / 2}" y="{TOP + plot_h / 2}" text-anchor="middle" '
                     f'font-size="12" fill="#888">no data yet</text>')
    parts.append("</svg>")
    return "".join(parts)


def _short(label: str, limit: int = 18) -> str:
    return label if len(label) <= limit else label[:limit - 1] + "…"
