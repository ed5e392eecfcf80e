"""`panel serve dashboard/app.py`: the Explorer on the bundled digits, no download needed."""
import panel as pn

from dashboard import Explorer

pn.extension("tabulator", notifications=True)  # the Compare page's run table; Panel serves its JS from the package
pn.config.exception_handler = lambda err: pn.state.notifications.error(f"{type(err).__name__}: {err}", duration=8000) \
    if pn.state.notifications is not None else None


class Fast(pn.theme.Fast):
    """Panel's Fast design without its web font (Open Sans from fonts.googleapis.com): the page makes no request
    beyond this server, so it renders the same offline (the text falls back to the system's sans-serif)."""

    _resources = {kind: files for kind, files in pn.theme.Fast._resources.items() if kind != "font"}


pn.template.FastListTemplate(
    title="Invariance Lab",
    main=[Explorer()],
    header_background="#2f4f6f",
    design=Fast,
).servable()
