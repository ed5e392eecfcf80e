"""The registry of renderers: how the page draws each engine view type (invlab.diagnostics), in one table.

A renderer is registered once per view type with `register_renderer(ViewType)`; the pane that streams views
(`panes.ViewPane`) and the notebook's `show` ask this table for the nearest registered type of a view and never name a
view type themselves, so a new view type (a plugin's, say) is drawn everywhere by registering its renderer here. A
view type with no renderer is not an error on the page: its pane shows `missing_renderer_html`, one sentence saying
what is missing. The table is a registration table (`invlab.registry.table`), so a plugin that fails half-way leaves
no renderer behind.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from invlab import diagnostics as dg
from invlab.dashboard.safe_text import html_text
from invlab.dashboard.views.charts import render_curves, render_scatter, render_spectrum
from invlab.dashboard.views.maps import render_field, render_heatmap, render_image_grid
from invlab.dashboard.views.tables import scalars_html
from invlab.registry import table

PRESENTER_FIELD = 1.2  # presenter mode's field frame: a two-moons lesson's key view, whole under the banner at 1280×720


@dataclass(frozen=True)
class Look:
    """How a view is drawn at this moment: at presenter mode's size or the page's, and a spectrum's x axis in log10."""

    large: bool = False
    log_x: bool = True


@dataclass(frozen=True)
class Renderer:
    """How the page draws one view type: `draw(view, look)` returns a HoloViews element, or, for a view drawn as text
    (`html=True`, a table), an HTML string redrawn whole; `log_toggle` puts a 'log x' checkbox under the plot, starting
    at the view's own `log`."""

    draw: Callable
    html: bool = False
    log_toggle: bool = False


RENDERERS: dict[type, Renderer] = table({})  # view type → its renderer


def register_renderer(view_type: type, *, html: bool = False, log_toggle: bool = False) -> Callable:
    """A decorator registering `draw(view, look: Look)` as how the page draws `view_type` and its subclasses (a later
    registration for the same type replaces the earlier); see `Renderer` for `html` and `log_toggle`."""

    def decorate(draw: Callable) -> Callable:
        RENDERERS[view_type] = Renderer(draw, html=html, log_toggle=log_toggle)
        return draw

    return decorate


def renderer_for(view: dg.View) -> Renderer | None:
    """The renderer registered for `view`'s type or the nearest base type it has; None when there is none."""
    return next((RENDERERS[cls] for cls in type(view).__mro__ if cls in RENDERERS), None)


def missing_renderer_html(view: dg.View) -> str:
    """The sentence a pane shows for a view type that has no renderer: which type, and how to give it one."""
    name = html_text(type(view).__name__)
    return (f'<div class="invlab-view-missing">This page has no renderer for view type {name}, so it is not drawn; '
            f"register one with <code>invlab.dashboard.views.register_renderer({name})</code>.</div>")


def draw(view: dg.View, look: Look = Look()):
    """`view` drawn by its registered renderer: a HoloViews element, or an HTML string for a view drawn as text.
    TypeError naming the view type when it has no renderer (a page shows `missing_renderer_html` instead)."""
    renderer = renderer_for(view)
    if renderer is None:
        raise TypeError(f"no renderer for view type {type(view).__name__}; register one with "
                        f"invlab.dashboard.views.register_renderer({type(view).__name__})")
    return renderer.draw(view, look)


# The built-in view types, registered through the door a plugin's use.
register_renderer(dg.ImageGrid)(lambda view, look: render_image_grid(view))
register_renderer(dg.Spectrum, log_toggle=True)(lambda view, look: render_spectrum(view, log=look.log_x))
register_renderer(dg.Heatmap)(lambda view, look: render_heatmap(view))
register_renderer(dg.Field2D)(lambda view, look: render_field(view, scale=PRESENTER_FIELD if look.large else 1.0))
register_renderer(dg.Curves)(lambda view, look: render_curves(view))
register_renderer(dg.Scatter)(lambda view, look: render_scatter(view))
register_renderer(dg.Scalars, html=True)(lambda view, look: scalars_html(view))
