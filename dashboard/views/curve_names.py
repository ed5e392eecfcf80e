"""What a live curve's plot is called when its metric's name is long: a user's own loop logs whatever it names, and a
watched model's hyperparameters are logged by their path in the model (`hyperparameters/covar_module.base_kernel.
base_kernel.lengthscale`). A Bokeh title is one line cut at the plot's edge and a y-axis label is cut at the plot's
height, so a long name gets a title on at most two lines, broken between words (the quantity first, where it sits in
the model after it, a long path shortened in its middle at a dot) and a short axis label; the full name is shown on
hover (`CurvePlot`'s hover tool)."""
from __future__ import annotations

import textwrap

from invlab.dashboard.views.style import METRICS, metric_spec
from invlab.models.registry import metric_words

TITLE_CHARS = 44  # a title line fits the narrowest curve plot at the laptop's title size
AXIS_CHARS = 28  # a y-axis label fits the plot's height
ELLIPSIS = "…"


def is_long(metric: str) -> bool:
    """Whether `metric`'s own title would not fit on one line of its plot."""
    return len(metric_spec(metric).title) > TITLE_CHARS


def curve_title(metric: str) -> str:
    """The plot title of `metric`: its title from `METRICS` when it fits, else at most two lines of at most
    `TITLE_CHARS` characters, never cut inside a word."""
    title = metric_spec(metric).title
    if len(title) <= TITLE_CHARS:
        return title
    view, _, path = metric.rpartition("/") if "/" in metric else ("", "", metric)
    where, _, leaf = path.rpartition(".")
    head = _words(leaf)
    head = head[:1].upper() + head[1:]
    if view:
        head += f" ({_words(view)})"
    if not where:
        return "\n".join(_wrapped(head, 2))
    return "\n".join([*_wrapped(head, 1), _short_path(where, TITLE_CHARS)])


def axis_label(metric: str) -> str:
    """The y-axis label of `metric`: its label from `METRICS` or its family's registry entry (both worded to fit) or
    any that fits, else the quantity's own name (the last part of a dotted path), cut between words if still too
    long."""
    label = metric_spec(metric).label
    if len(label) <= AXIS_CHARS or metric in METRICS or metric_words(metric) is not None:  # worded to fit
        return label
    leaf = metric.rpartition("/")[2].rpartition(".")[2]
    return _wrapped(_words(leaf), 1, AXIS_CHARS)[0]


def _words(name: str) -> str:
    return name.replace("_", " ").replace(".", " ").strip()


def _wrapped(text: str, lines: int, width: int = TITLE_CHARS) -> list[str]:
    """`text` on at most `lines` lines of at most `width` characters, broken between words; what does not fit is
    left out, its place marked with an ellipsis."""
    parts = textwrap.wrap(text, width=width, break_long_words=False) or [""]
    if len(parts) > lines:
        parts = parts[:lines]
        last = parts[-1]
        while len(last) + 2 > width and " " in last:
            last = last.rsplit(" ", 1)[0]
        parts[-1] = f"{last} {ELLIPSIS}"
    return [p if len(p) <= width else p[:width - 1] + ELLIPSIS for p in parts]


def _short_path(path: str, width: int) -> str:
    """A dotted path of at most `width` characters: the parts in its middle left out at a dot (`covar_module.….
    base_kernel`), keeping its first and last parts."""
    if len(path) <= width:
        return path
    parts = path.split(".")
    head, tail = parts[:1], parts[1:]
    while tail and len(".".join([*head, ELLIPSIS, *tail])) > width:
        tail = tail[1:]
    return ".".join([*head, ELLIPSIS, *tail]) if tail else _wrapped(path.replace(".", " "), 1, width)[0]
