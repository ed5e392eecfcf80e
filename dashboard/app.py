"""`panel serve dashboard/app.py`: the Explorer on the bundled digits, no download needed."""
import panel as pn

from dashboard import Explorer

pn.extension(notifications=True)
pn.config.exception_handler = lambda err: pn.state.notifications.error(f"{type(err).__name__}: {err}", duration=8000) \
    if pn.state.notifications is not None else None

pn.template.FastListTemplate(
    title="Invariance Lab",
    main=[Explorer()],
    header_background="#2f4f6f",
).servable()
