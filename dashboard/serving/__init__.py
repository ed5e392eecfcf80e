"""Serving the dashboard: `invlab serve` started from Python and where Chromium is (`process`), what one page may ask of
the server (`limits`), who a page belongs to (`identity`), the Content-Security-Policy (`csp`), the page's plots
painted without Bokeh's needless CSS lookups (`css_reads`), a page's first seconds
(`session_start`), its closing (`closing`), the theme switch (`theme`), a reload coming back to its run
(`reattach`), the start-up objects kept out of the garbage collector's walks (`collection`), Panel's component route
kept from importing what a URL names (`component_route`) and a link's odd digits read as text (`link_query`)."""
from invlab.dashboard.serving.limits import ServerLimits
from invlab.dashboard.serving.process import (
    CHROMIUM_ARGS,
    chromium_path,
    free_port,
    serve_dashboard,
    serve_dashboard_process,
)

__all__ = ["CHROMIUM_ARGS", "ServerLimits", "chromium_path", "free_port", "serve_dashboard", "serve_dashboard_process"]
