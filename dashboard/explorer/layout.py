"""The Training page's layout, for a projector, a laptop and a tablet.

- the controls column beside the plots, under them on a narrow screen (a phone, a tablet held upright);
- the sidebar's tabs fit its width (they wrap onto a second row rather than scroll out of sight);
- the current lesson's key view at the top of the plots, outlined, once its first data arrives;
- a "presenter" zoom (larger fonts, lines and plots for a projector), a control and the link flag `presenter=1`.

The plots themselves (the curves' and views' grids) are laid out by `CurveBoard` and `LiveFeed`; this module only
places those grids on the page.
"""
from __future__ import annotations

import panel as pn

from invlab.dashboard.explorer.tabs import KeptTabs
from invlab.dashboard.safe_text import html_text

SIDEBAR_WIDTH = 340  # px: the controls column
MAIN_MIN_WIDTH = 420  # px: below this beside the sidebar, the plots go under the controls instead
PRESENTER_ZOOM = 1.35  # how much larger the page is drawn in presenter mode
KEY_OUTLINE = "2px solid #1f6fb5"  # the lesson's key view
# The sidebar's five tabs fit its width side by side (narrower padding); with larger fonts they wrap onto a second row
# instead of scrolling out of sight.
SIDEBAR_TABS_CSS = """
.bk-headers-wrapper { flex-wrap: wrap; overflow: visible; }
.bk-header { overflow: visible; }
.bk-tab { padding: 6px 7px !important; }
"""


# -- a phone held upright (390 px wide and less) --------------------------------------------------------------------
# One block of rules per part of the page, each inside this media query, so a tablet, a laptop and a projector are
# drawn exactly as without them. On a phone: the page's margins shrink to a few px (the template's 31 px each side
# are a twelfth of the screen); rows of buttons and options wrap instead of running past the screen's right edge; the
# status line wraps between words instead of being cut with "…"; the plots are at most the screen's width.
PHONE = "@media (max-width: 600px)"
PHONE_PAGE_CSS = PHONE + """ {
  #main { padding: 6px 2px !important; }
  #main .pn-wrapper { padding: 6px 4px !important; }
}"""
PHONE_TABS_CSS = PHONE + """ {
  .bk-headers-wrapper { flex-wrap: wrap; overflow: visible; }
  .bk-header { overflow: visible; }
  .bk-tab { padding: 6px 8px !important; }
}"""
PHONE_ROW_CSS = PHONE + " { :host { flex-wrap: wrap !important; } }"
# the status's first two lines: two rows high at least (the figures fill them as the run starts), more if needed
PHONE_STATUS_CSS = PHONE + """ {
  .invlab-status > div:not([data-field]) { white-space: normal !important; height: auto !important;
                                           min-height: 2.9em; overflow-wrap: anywhere; }
}"""
PHONE_SIDEBAR_CSS = PHONE + " { :host { max-width: 100%; } }"
# the curves (stretching plots) narrow to the screen's width; a view of fixed width (a map with its colour bar, a
# table of values) scrolls sideways inside its own box rather than past the screen's edge
PHONE_PLOTS_CSS = PHONE + """ {
  .bk-Figure { min-width: 0 !important; max-width: 100% !important; }
  .invlab-view { max-width: 100%; overflow-x: auto; }
}"""


def phone_rows(*rows) -> None:
    """Let each of `rows` (a `pn.Row` of buttons or options) wrap onto more lines on a phone."""
    for row in rows:
        row.stylesheets = [*row.stylesheets, PHONE_ROW_CSS]


# The notice under the run's buttons, drawn as the theme's warning alert. It is always in the layout and empty when
# there is nothing to say: a pane that appears pushes the plots down, and Bokeh lays the whole page out again
# (400-600 ms before a first notice showed with three pages training), where new text only reflows the browser's.
NOTICE_CSS = """
.invlab-notice { padding: 0.75rem 1.25rem; border: 1px solid var(--warning-border-subtle); border-radius: 0.25rem;
                 color: var(--warning-text-color); background-color: var(--warning-bg-subtle); margin: 5px 0; }
"""


def notice_pane() -> pn.pane.HTML:
    """The page's notice line (the last action's outcome, a change waiting for Reset): empty, no height."""
    return pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10), stylesheets=[NOTICE_CSS])


def notice_html(text: str) -> str:
    """The notice pane's HTML for `text` (shown as text, never as markup), nothing for no text."""
    return f'<div class="invlab-notice" role="status">{html_text(text)}</div>' if text else ""


def sidebar_tabs(tabs) -> pn.Tabs:
    """The controls column: `tabs` (Panel objects with names) as tabs that all fit its width, each drawn in the
    browser when it is first shown (a page load builds the Data tab's widgets, not all five tabs') and kept."""
    return KeptTabs(*tabs, width=SIDEBAR_WIDTH, stylesheets=[SIDEBAR_TABS_CSS, PHONE_SIDEBAR_CSS])


def training_page(sidebar, main: pn.Column) -> pn.FlexBox:
    """The sidebar and the main column side by side; on a screen narrower than both (a tablet, a phone) the main
    column (the lesson, Start, the status, the plots) comes first and the controls under it.

    `wrap-reverse` draws the second line above the first, so the main column, wrapped onto the second line, is on
    top; in that mode the cross axis runs upwards, so `flex-end` aligns both columns to the top when they fit side
    by side."""
    main.styles = {**(main.styles or {}), "flex": f"1 1 {MAIN_MIN_WIDTH}px", "min-width": "0"}
    sidebar.styles = {**(sidebar.styles or {}), "flex": "0 0 auto"}
    return pn.FlexBox(sidebar, main, flex_wrap="wrap-reverse", align_items="flex-end", sizing_mode="stretch_width",
                      name="Training")


# -- presenter mode on a projector (1280×720) ------------------------------------------------------------------------
# The lesson's key view, placed first in the first row of plots, must be whole on the first screen: under the
# template's header and the page tabs (about 140 px) there is room for the banner, the run's buttons and one plot,
# not for the status line and the notice as well. So in presenter mode the banner is drawn tighter and the first row
# of plots comes right under the buttons, the status line, the notice and the rest under it (CSS `order` in the main
# column: nothing moves between layouts, turning presenter mode on or off only restyles).
PRESENTER_BANNER = {"padding": "0.3rem 0.9rem", "margin-top": "0", "margin-bottom": "0"}
OWN_BANNER = {"padding": "0.75rem 1.25rem", "margin-top": "5px", "margin-bottom": "5px"}  # Panel's alert
# the banner's paragraphs without their gaps, the folded steps' summary on the line after the text
PRESENTER_BANNER_CSS = """
:host(.invlab-presenter) p { margin: 0; }
:host(.invlab-presenter) details { margin: 0.15em 0 0 0; }
"""
AFTER_KEY_ROW = "1"  # the CSS order of the parts under the first row of plots (the others keep 0)


def presenter_styles(on: bool) -> dict:
    """The styles of a part of the page (its controls, banner, buttons, status: never a plot) for presenter mode on
    or off."""
    return {"zoom": str(PRESENTER_ZOOM) if on else "1"}


def presenter_order(on: bool, banner, after_key_row) -> None:
    """Presenter mode on or off: the lesson's `banner` tighter, and the parts of the main column in `after_key_row`
    (the status, the notice, the plots' options, the other plots) under the first row of plots, or back in place."""
    banner.styles = {**(banner.styles or {}), **(PRESENTER_BANNER if on else OWN_BANNER)}
    if PRESENTER_BANNER_CSS not in banner.stylesheets:
        banner.stylesheets = [*banner.stylesheets, PRESENTER_BANNER_CSS]
    others = [c for c in banner.css_classes if c != "invlab-presenter"]
    banner.css_classes = [*others, "invlab-presenter"] if on else others
    for part in after_key_row:
        part.styles = {**(part.styles or {}), "order": AFTER_KEY_ROW if on else "0"}


def key_view_names(lesson) -> set[str]:
    """The names a lesson watches (its key view, its second run's and what each step points at), as metrics or view
    names."""
    if lesson is None:
        return set()
    names = (lesson.key_view, lesson.compare_view, *(step.watch for step in lesson.steps))
    return {name for name in names if name}


def is_key_view(name: str, view, keys: set[str]) -> bool:
    """Whether the view `name` shows one of `keys` (by its name, or a metric it draws)."""
    return name in keys or bool(set(getattr(view, "covers", ()) or ()) & keys)


class KeyViewPlacer:
    """Brings the lesson's key views to the top of the plots: each moves from the views' grid into the first row of
    curves, first in it (CSS order) and outlined, so a lesson that watches a view and a curve (the learned range and
    the ELBO overtaking the dashed plain run) has both on the first screen. Call `place(view_panes)` after each
    update of the views; `LiveFeed.detach` takes a placed view out of either row."""

    def __init__(self, curves, views, keys: set[str]):
        self.curves, self.views, self.keys = curves, views, keys

    def place(self, view_panes: dict) -> None:
        """Move the lesson's key views among `view_panes` (name → pane) into the first row of curves, outlined."""
        if not self.keys:
            return
        for name, pane in view_panes.items():
            panel = pane.panel
            if panel in self.curves.objects or not is_key_view(name, pane.pipe.data, self.keys):
                continue
            panel.styles = {**(panel.styles or {}), "order": "-1", "outline": KEY_OUTLINE}
            if panel in self.views.objects:
                self.views.remove(panel)
            self.curves.insert(0, panel)
