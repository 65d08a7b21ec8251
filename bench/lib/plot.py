"""Small SVG plots for BENCHMARKS.md (no plotting library on the build machines)."""

COLORS = {"tutti": "#d62728", "Snapcast": "#1f77b4"}


def skew_svg(series, path, xlabel, ymax=1000.0, marks=(), width=720, height=300):
    """Skew (µs) over time (s), one polyline per system: `series` maps a name to [(t, skew)].
    Values beyond ±ymax are clipped to the edge; `marks` are (t, label) vertical lines."""
    pad = 50
    tmax = max((t for pts in series.values() for t, _ in pts), default=1) or 1
    tmin = min((t for pts in series.values() for t, _ in pts), default=0)

    def x(t):
        return pad + (width - 2 * pad) * (t - tmin) / max(1e-9, tmax - tmin)

    def y(s):
        return height / 2 - (height / 2 - pad / 2) * max(-ymax, min(ymax, s)) / ymax

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<line x1="{pad}" y1="{height / 2}" x2="{width - pad}" y2="{height / 2}" stroke="#999"/>']
    for v in (-ymax, -ymax / 2, ymax / 2, ymax):
        parts.append(f'<line x1="{pad}" y1="{y(v)}" x2="{width - pad}" y2="{y(v)}" stroke="#eee"/>')
        parts.append(f'<text x="2" y="{y(v) + 4}">{v:g} µs</text>')
    for t, label in marks:
        parts.append(f'<line x1="{x(t):.1f}" y1="{pad / 2}" x2="{x(t):.1f}" y2="{height - pad / 2}" stroke="#bbb" stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{x(t) + 3:.1f}" y="{pad / 2 + 10}" fill="#666">{label}</text>')
    for i, (name, pts) in enumerate(series.items()):
        color = COLORS.get(name, "#333")
        if pts:
            poly = " ".join(f"{x(t):.1f},{y(s):.1f}" for t, s in pts)
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1" points="{poly}"/>')
        parts.append(f'<text x="{width - pad - 120}" y="{20 + 15 * i}" fill="{color}">{name}</text>')
    parts.append(f'<text x="{pad}" y="{height - 8}">{xlabel}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts))
