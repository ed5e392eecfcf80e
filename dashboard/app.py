"""`panel serve dashboard/app.py`: the Explorer on the bundled digits, no download needed.

A page that cannot be built (a data directory that is not a directory, a bad limit) says so, with the fix, instead
of staying blank."""
import logging

import panel as pn

from invlab.dashboard import Explorer
from invlab.dashboard.explorer.layout import PHONE_PAGE_CSS
from invlab.dashboard.safe_text import markdown_text, notify
from invlab.dashboard.serving import component_route, csp, link_query
from invlab.dashboard.serving.collection import freeze_start_up_objects
from invlab.dashboard.serving.identity import page_owner
from invlab.dashboard.serving.limits import ServerLimits
from invlab.dashboard.serving.reattach import keyed, page_coming_back_to_its_run, register
from invlab.dashboard.serving.session_start import (
    hold_until_connected,
    packaged_stylesheets,
    stylesheets_from_this_server,
)
from invlab.dashboard.serving.signals import stop_on_signals
from invlab.dashboard.serving.theme import page_for, session_theme
from invlab.dashboard.session.scheduling import server_thread_on_one_core, warm_optimisers
from invlab.dashboard.views.style import draw_on_canvas
from invlab.errors import InvlabError

csp.install()  # only this server's own scripts run on the page (dashboard/serving/csp.py)
component_route.install()  # no URL makes the server import a module (dashboard/serving/component_route.py)
link_query.install()  # a link's `?run=¹` is refused in words, not a page left unbuilt (serving/link_query.py)
pn.extension("tabulator", notifications=True)  # the Compare page's run table; Panel serves its JS from the package
stylesheets_from_this_server()  # a pane changing on a tab not shown keeps its links here (serving/session_start.py)
pn.config.exception_handler = lambda err: notify("error", f"{type(err).__name__}: {err}")
server_thread_on_one_core()  # the server's own torch work keeps to one core: the cores are the training pages'
draw_on_canvas()  # no emulated WebGL in a browser without a GPU: the plots are small (dashboard/views/style.py)
warm_optimisers()  # the first ▶ Start's cold imports, done as the server warms up (not while a user waits)
freeze_start_up_objects()  # a collection after a page closes walks only the pages' objects (serving/collection.py)
stop_on_signals()  # SIGTERM, Ctrl-C: each page's run checkpointed, marked interrupted; exit 0 (serving/signals.py)


def page():
    """One served page: an `Explorer` with the server's limits and the logged-in user (an admin if listed), or a page
    with the message when the server's settings are refused."""
    packaged_stylesheets()  # this server's own stylesheet links from the first model on (serving/session_start.py)
    hold_until_connected()  # a browser slower to connect than a closed tab's few seconds keeps this session
    try:
        limits = ServerLimits.from_env()
        user = page_owner()  # the signed logged-in user under --basic-auth or OAuth (no cookie a page can write)
        resume = (pn.state.session_args or {}).get("resume", [b""])[0].decode("utf-8", "replace")
        make = lambda: register(Explorer(limits=limits, user=user, admin=user in limits.admins))  # noqa: E731
        if resume:  # the same page after a theme change: its run goes on
            return keyed(page_for(resume, user, make))  # its own key: a later reload comes back to it too
        return page_coming_back_to_its_run(user, make)  # a reload comes back to the run its page was training
    except InvlabError as err:
        text = str(err)
    except OSError as err:
        text = (f"the data directory cannot be used ({type(err).__name__}: {err}); point INVLAB_DATA at a writable "
                "directory and restart the server")
    logging.getLogger("invlab.dashboard").error("the page cannot be built: %s", text)
    return pn.pane.Alert(f"**The dashboard cannot start:** {markdown_text(text)}", alert_type="danger",
                         sizing_mode="stretch_width")


class Fast(pn.theme.Fast):
    """Panel's Fast design without its web font (Open Sans from fonts.googleapis.com): the page makes no request
    beyond this server, so it renders the same offline (the text falls back to the system's sans-serif)."""

    _resources = {kind: files for kind, files in pn.theme.Fast._resources.items() if kind != "font"}


def _checked_theme() -> str:
    """The link's `?theme=` if it is one of the template's themes, else "default"; the template reads the request's
    own argument too, and an unknown one (any text a link carries) would stop the page from being built."""
    theme = session_theme()
    args = pn.state.session_args
    if args is not None and "theme" in args:
        args["theme"] = [theme.encode()]
    return theme


# Until the browser has built the page's document (seconds on a busy laptop, more while a class loads it together), the
# template's frame shows this line where the page will be, instead of an empty card; the document replaces it.
BUILDING_CSS = """
#main [data-root-id]:empty::before {
  content: "Building the page\\2026";
  display: block;
  padding: 24px 16px;
  font-size: 18px;
  color: var(--neutral-foreground-hint, #666);
}
"""

pn.template.FastListTemplate(
    title="Invariance Lab",
    main=[page()],
    raw_css=[BUILDING_CSS, PHONE_PAGE_CSS],
    header_background="#2f4f6f",
    meta_viewport="width=device-width, initial-scale=1",  # a phone lays the page out at its own width, not 980 px
    design=Fast,
    theme=_checked_theme(),  # a link's ?theme= is one of the template's themes or ignored, never handed on as it came
).servable()
