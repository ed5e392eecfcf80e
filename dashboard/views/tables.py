"""The renderer of `Scalars`: an HTML table as tall as its rows, every name and value escaped as text."""
from __future__ import annotations

import math

import panel as pn

from invlab import diagnostics as dg
from invlab.dashboard.safe_text import html_text
from invlab.dashboard.views.style import WIDTH


def scalars_html(view: dg.Scalars) -> str:
    """A table with one row per value, as tall as its rows (nothing clipped; long names wrap)."""
    rows = []
    for name, value in view.values.items():
        shown, where = _split_name(name)
        where = f' <span style="color:#888;font-size:0.85em">({html_text(where)})</span>' if where else ""
        rows.append(f'<tr><td style="padding:2px 12px 2px 0;word-break:break-word">{html_text(shown)}{where}</td>'
                    f'<td style="padding:2px 0;text-align:right;font-family:monospace">'
                    f'{_format_value(value)}</td></tr>')
    return (f'<table class="invlab-scalars" data-rows="{len(rows)}" style="border-collapse:collapse;font-size:0.9em;'
            f'width:100%">{"".join(rows)}</table>')


def _split_name(name: str) -> tuple[str, str]:
    """"kernel.base.lengthscale" → ("lengthscale", "kernel.base");
    "q.q_mu (mean of 40)" → ("q mu (mean of 40)", "q")."""
    base, paren = (name.split(" (", 1) + [""])[:2]
    paren = f" ({paren}" if paren else ""
    if "." in base and " " not in base:
        where, _, last = base.rpartition(".")
        return last.replace("_", " ") + paren, where
    return name.replace("_", " ") if " " not in name else name, ""


def _format_value(value) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return html_text(str(value))
    if not math.isfinite(v):
        return str(v)
    return f"{int(v):d}" if v.is_integer() and abs(v) < 1e9 else f"{v:.4g}"


def render_scalars(view: dg.Scalars) -> pn.pane.HTML:
    """The values as an HTML table (`scalars_html`) as wide as a view, narrower where the screen is (a phone): its
    names wrap, so its values are read without scrolling sideways."""
    return pn.pane.HTML(scalars_html(view), max_width=WIDTH, sizing_mode="stretch_width")
