"""What the page draws: the diagnostic views' panes and renderers (`panes`; `renderers`, the registry of which
renderer draws which view type, `register_renderer`; `charts`, `maps`, `tables`), the live
training curves (`curve_plot`, `curve_board`, `run_layout`), the look of every plot (`style`) and which views are on
screen (`watch`)."""
from invlab.dashboard.views.curve_board import CurveBoard
from invlab.dashboard.views.curve_plot import CurvePlot
from invlab.dashboard.views.panes import ViewPane
from invlab.dashboard.views.renderers import Look, register_renderer, renderer_for
from invlab.dashboard.views.watch import ViewWatcher

__all__ = ["CurveBoard", "CurvePlot", "Look", "ViewPane", "ViewWatcher", "register_renderer", "renderer_for"]
