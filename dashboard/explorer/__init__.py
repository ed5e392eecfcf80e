"""The Training page and the parts the `Explorer` holds and wires together: its widgets, sidebar and page tabs
(`page`), the status bar (`status`), the live feed of curves and views (`feed`), the training thread's runs shown on
the page (`training`), what a change of the settings does to the run (`changes`), stored runs (`runs`), the link in
the address bar (`location`), connecting to and closing with the page (`lifecycle`), the layout for projector, laptop
and tablet (`layout`) and the user's own data (`user_data`)."""
from invlab.dashboard.explorer.explorer import Explorer
from invlab.dashboard.explorer.status import StatusBar

__all__ = ["Explorer", "StatusBar"]
