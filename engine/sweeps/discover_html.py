"""A discover report as one self-contained HTML file: the verdict, the ranked table, the log Bayes factors and the
learned ranges over training as inline SVG. It loads nothing (no script, no stylesheet, no font, no image from
anywhere), so it opens offline and can be attached or shared; every string from the data, the store or a plugin is
escaped, never read as HTML.
"""
from __future__ import annotations

import html
import math
from pathlib import Path

from ..errors import printable
from .discover_names import NONE
from .discover_ranges import INVARIANCE, kind_of, range_cell
from .discover_report import CandidateResult, DiscoverReport
from .discover_verdict import MARK, chosen
from .plus_minus import plus_minus

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
STYLE = """body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:1em 0}td,th{border-bottom:1px solid #ddd;padding:4px 8px;text-align:right;
white-space:nowrap}td:nth-child(2),th:nth-child(2){text-align:left}td:nth-child(6),th:nth-child(6){white-space:normal;min-width:22em;
text-align:left}.verdict{font-size:1.25em;margin:.6em 0}.partial{color:#b00}
.notes li{margin:.2em 0}.charts{display:flex;flex-wrap:wrap;gap:12px}svg text{font-size:11px}
.failed{color:#b00}.second.disagrees{color:#b00}"""


def esc(value) -> str:
    """Any value as text safe inside HTML (quotes included)."""
    return html.escape(str(value), quote=True)


def _pm(mean, sd, places: int = 2, scale: float = 1.0, unit: str = "") -> str:
    return plus_minus(mean, sd, places, scale, unit)  # with an sd: the sd to two figures, the mean to its place


def _range_text(c: CandidateResult, name: str) -> str:
    """One learned range's final value: `rotation 91.7 ± 1.6` (symmetric: mean ± sd over seeds), `shear [-0.14,
    0.18]` (two-sided: the mean ends)."""
    if name in c.learned:
        v = c.learned[name]
        return f"{name} {_pm(v['mean'], v['sd'], 3 if abs(v['mean'] or 0) < 10 else 1)}"
    lo, hi = c.learned.get(f"{name}.lo", {}).get("mean"), c.learned.get(f"{name}.hi", {}).get("mean")
    places = 1 if max(abs(lo or 0), abs(hi or 0)) >= 10 else 3
    return f"{name} [{_pm(lo, None, places)}, {_pm(hi, None, places)}]"


def learned_text(c: CandidateResult, limit: int | None = None) -> str:
    """A candidate's learned ranges as judged (`discover_ranges`), final mean ± sd over seeds: the invariances first
    (`rotation 91.7 ± 1.6` symmetric, `rotation [-44.0, 45.0]` two-sided), then each warp (`scale_x [0.125, 0.161]
    (a warp)`), then `no invariance in shear, …`; at most `limit` of them (the rest counted)."""
    names = list(dict.fromkeys(k.rpartition(".")[0] if k.rpartition(".")[2] in ("lo", "hi") and "." in k else k
                               for k in c.learned))
    parts = (range_cell(c, lambda name: _range_text(c, name)) if c.judgements
             else [_range_text(c, name) for name in names])
    if limit is not None and len(parts) > limit:
        parts = parts[:limit] + [f"(+{len(parts) - limit} more)"]
    return ", ".join(parts) or "-"


def score_header(report: DiscoverReport) -> str:
    """The ranking's score column: "test error" for classification, "test RMSE" for regression, "test RMSE
    (price_keur)" for a table whose target column has a name (the RMSE is in its units; control characters of the
    name shown as "?")."""
    if not any(c.test_rmse[0] is not None for c in report.ranking):
        return "test error"
    return f"test RMSE ({printable(report.target_name)})" if report.target_name else "test RMSE"


def table_rows(report: DiscoverReport, limit: int | None = None) -> tuple[list[str], list[list[str]]]:
    """The ranked table as text cells: headers and one row per candidate (also what the terminal prints, with at most
    `limit` learned ranges per candidate)."""
    score = score_header(report)
    regression = score != "test error"
    headers = ["#", "candidate", "seeds", "ELBO (whole data)", "log BF vs none", "learned range (final)", score,
               "NLPD", "s / run", "failed"]
    rows, best = [], chosen(report.ranking)  # the verdict's candidate: its rank is marked ✓
    for i, c in enumerate(report.ranking, 1):
        score = (_pm(*c.test_rmse, 3) if regression else _pm(*c.test_error, 1, 100, "%"))
        bf = "0 (baseline)" if c.candidate == NONE else _pm(c.log_bf, c.log_bf_sd, 1)
        rank = f"{i} {MARK}" if c is best else str(i)
        rows.append([rank, c.label, str(c.finished), _pm(c.elbo_mean, c.elbo_sd, 1), bf, learned_text(c, limit),
                     score, _pm(*c.nlpd, 3), "-" if c.seconds is None else f"{c.seconds:.1f}",
                     str(len(c.failed)) if c.failed else ""])
    return headers, rows


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step) + 1)]


def bayes_factor_svg(report: DiscoverReport) -> str:
    """Horizontal bars of each candidate's log Bayes factor against none (nats) with ± sd whiskers."""
    rows = [c for c in report.ranking if c.log_bf is not None]
    if not rows:
        return "<p>No log Bayes factor: the baseline none did not finish.</p>"
    width, left, right, bar = 640, 130, 20, 22
    height = 60 + bar * len(rows)  # the bars, then the tick labels and the axis label, descenders included
    values = [c.log_bf + s * (c.log_bf_sd or 0.0) for c in rows for s in (-1, 1)] + [0.0]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.05 or 1.0
    lo, hi = lo - pad, hi + pad

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (width - left - right)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="13" '
           f'font-family="sans-serif" role="img" aria-label="log Bayes factor against none">']
    for t in _ticks(lo, hi):
        out.append(f'<line x1="{x(t):.1f}" y1="10" x2="{x(t):.1f}" y2="{height - 40}" stroke="#eee"/>'
                   f'<text x="{x(t):.1f}" y="{height - 24}" text-anchor="middle">{t:g}</text>')
    for i, c in enumerate(rows):
        y = 12 + i * bar
        x0, x1 = sorted((x(0.0), x(c.log_bf)))
        colour = COLOURS[0] if c.log_bf > 0 else "#999"
        out.append(f'<text x="{left - 6}" y="{y + bar / 2 + 4:.1f}" text-anchor="end">{esc(c.label)}</text>'
                   f'<rect x="{x0:.1f}" y="{y + 3}" width="{max(x1 - x0, 1):.1f}" height="{bar - 6}" fill="{colour}"/>')
        if c.log_bf_sd:
            a, b = x(c.log_bf - c.log_bf_sd), x(c.log_bf + c.log_bf_sd)
            out.append(f'<line x1="{a:.1f}" y1="{y + bar / 2}" x2="{b:.1f}" y2="{y + bar / 2}" stroke="#000"/>')
    out.append(f'<line x1="{x(0.0):.1f}" y1="8" x2="{x(0.0):.1f}" y2="{height - 40}" stroke="#000"/>')
    out.append(f'<text x="{(left + width) / 2:.0f}" y="{height - 6}" text-anchor="middle">log Bayes factor vs none '
               '(nats)</text></svg>')
    return "".join(out)


def path_svg(candidate: str, name: str, steps: list[int], series: dict[str, list], kind: str | None = None) -> str:
    """A learned range over training (first seed): each of `series` (label → values at `steps`; 'lo' and 'hi' for a
    two-sided range) against step, as a small line chart; its title says when the range's `kind` is not an
    invariance ('a warp', 'no invariance')."""
    lines = {label: [(s, v) for s, v in zip(steps, values) if v is not None and math.isfinite(v)]
             for label, values in series.items()}
    lines = {label: points for label, points in lines.items() if len(points) >= 2}
    width, height, left, bottom, top = 260, 172, 46, 40, 24  # room above for the title, below for the step labels
    title = f"{candidate}: {name}" + (" (°)" if name.split("_")[-1] == "rotation" else "")
    title += {"warp": ": a warp", "negligible": ": no invariance"}.get(kind or INVARIANCE, "")
    if not lines:
        return f"<div><p>{esc(title)}: no path recorded</p></div>"
    every = [p for points in lines.values() for p in points]
    s0, s1 = min(s for s, _ in every), max(s for s, _ in every)
    v0, v1 = min(v for _, v in every), max(v for _, v in every)
    if v1 - v0 < 1e-12:
        v0, v1 = v0 - 1.0, v1 + 1.0

    def xy(s, v):
        return (left + (s - s0) / max(s1 - s0, 1) * (width - left - 8),
                top + (v1 - v) / (v1 - v0) * (height - bottom - top))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="12" '
           f'font-family="sans-serif" role="img" aria-label="{esc(title)}"><text x="4" y="14">{esc(title)}</text>']
    for t in _ticks(v0, v1, 3):
        y = xy(s0, t)[1]
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - 8}" y2="{y:.1f}" stroke="#eee"/>'
                   f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
    for i, (label, points) in enumerate(lines.items()):
        line = " ".join(f"{a:.1f},{b:.1f}" for a, b in (xy(s, v) for s, v in points))
        colour = COLOURS[i % len(COLOURS)]
        out.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        if len(lines) > 1:
            a, b = xy(*points[-1])
            out.append(f'<text x="{a - 2:.1f}" y="{b - 3:.1f}" text-anchor="end" fill="{colour}">{esc(label)}</text>')
    out.append(f'<text x="{left}" y="{height - 22}">{s0}</text>'
               f'<text x="{width - 8}" y="{height - 22}" text-anchor="end">{s1}</text>'
               f'<text x="{(left + width) / 2:.0f}" y="{height - 5}" text-anchor="middle">step</text></svg>')
    return "".join(out)


def range_charts(c: CandidateResult) -> list[str]:
    """One chart per learned range of a candidate (a two-sided range's lo and hi on one chart)."""
    groups: dict[str, dict[str, list]] = {}
    steps: dict[str, list] = {}
    for key, v in c.learned.items():
        name, _, side = key.rpartition(".")
        if side not in ("lo", "hi") or not name:
            name, side = key, key
        groups.setdefault(name, {})[side] = v["values"]
        steps.setdefault(name, v["steps"])
    return [path_svg(c.label, name, steps[name], series, kind_of(c, name)) for name, series in groups.items()]


def report_html(report: DiscoverReport) -> str:
    """The whole report as one HTML document (inline CSS and SVG only)."""
    headers, rows = table_rows(report)
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    charts = [chart for c in report.ranking for chart in range_charts(c)]
    title = f"Which invariances does {report.dataset} have?"
    partial = (f'<p class="partial">Partial report: {report.stored} of {report.total} runs stored (the run was '
               f'{esc(report.status)}).</p>' if report.partial else "")
    notes = "".join(f"<li>{esc(n)}</li>" for n in report.notes)
    failed = "".join(f'<li class="failed">{esc(c.label)}: {esc(m)}</li>' for c in report.ranking
                     for m in c.failed)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>{esc(title)}</h1>{partial}<p class=\"verdict\" id=\"verdict\">{esc(report.verdict)}</p>"
            f"{second_html(report)}"
            f"<p>Sweep {report.sweep_id}, ranked by the ELBO on the whole training set (mean ± sd over seeds, nats); "
            "the log Bayes factor against no invariance is the ELBO difference, paired by seed.</p>"
            f"<table id=\"ranking\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            f"<h2>Log Bayes factor against none</h2>{bayes_factor_svg(report)}"
            + (f"<h2>Learned ranges over training (first seed)</h2><div class=\"charts\">{''.join(charts)}</div>"
               if charts else "")
            + f"<h2>Notes</h2><ul class=\"notes\">{notes}{failed}</ul></body></html>\n")


def second_html(report: DiscoverReport) -> str:
    """The held-out data's second opinion as a paragraph (empty for a report without one)."""
    if report.second is None:
        return ""
    tone = "agrees" if report.second.agrees else "disagrees"
    return f'<p class="second {tone}" id="second-opinion">Second opinion: {esc(report.second.text)}</p>'


def write_report(report: DiscoverReport, path: str | Path) -> Path:
    """Write the HTML report to `path` (its folder created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report_html(report), encoding="utf-8")
    return path


__all__ = ["report_html", "write_report", "table_rows", "learned_text", "bayes_factor_svg", "path_svg", "range_charts",
           "second_html", "esc"]
