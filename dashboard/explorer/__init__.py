"""The Training page and the parts the `Explorer` wires together: its widgets and sidebar (`page`), the status bar
(`status`), the live feed of curves and views (`feed`), stored runs (`runs`), the link in the address bar (`location`),
the training thread's side of the page (`training`), the layout for projector, laptop and tablet (`layout`) and the
user's own data (`user_data`)."""
from invlab.dashboard.explorer.explorer import Explorer
from invlab.dashboard.explorer.status import StatusBar

__all__ = ["Explorer", "StatusBar"]
