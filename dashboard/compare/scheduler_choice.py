"""Who chooses the Dask scheduler a Compare page's runs go to (`SchedulerChoice`).

A scheduler address is not a harmless setting. The server connects to it as a Dask client and unpickles what its
workers send back, so whoever names the scheduler can run code in the server's process (a worker started with a
`--preload` that patches the training task returns an object whose unpickling runs a command); and even a refused
connection says whether a port is open. So on a served dashboard the address is the server's:

- `invlab serve --scheduler ADDRESS` sends every page's runs there; without it, to the server's own cluster;
- on a server with logins (a class), only a user named with `invlab serve --admin USER` may type another;
- without logins, a page may type one only when the server was started with `--allow-page-scheduler`.

Elsewhere the box shows the server's choice, read-only. The rule is applied on the server when the runs start (a
page's widget can be changed from its browser whatever it shows), and a refused address is never contacted: the
page says why beside the box. A notebook's page (no server limits) is its user's own process: it chooses freely.
"""
from __future__ import annotations

from invlab.errors import InvlabError

NOT_CONTACTED = "the address was not contacted; clear the Dask scheduler box to train on this server's own workers"
ADMINS_ONLY = ("on this server only the person running it chooses the Dask scheduler (`invlab serve --scheduler "
               f"ADDRESS`, or a user it names with --admin): {NOT_CONTACTED}")
NOT_ALLOWED = ("this server does not let a page choose its Dask scheduler (the person running it allows that with "
               f"`invlab serve --allow-page-scheduler`, or names one with --scheduler ADDRESS): {NOT_CONTACTED}")


class SchedulerRefused(InvlabError):
    """A scheduler address this page may not choose; it was not contacted."""


class SchedulerChoice:
    """The rule for one page: `limits` (a server's `ServerLimits`; None in a notebook), whether the server has
    `logins`, and whether the page's user is an `admin`."""

    def __init__(self, limits=None, *, logins: bool = False, admin: bool = False):
        self.limits, self.logins, self.admin = limits, bool(logins), bool(admin)

    @property
    def server_address(self) -> str:
        """The server's own scheduler (`invlab serve --scheduler`); "" for its own cluster, or in a notebook."""
        return getattr(self.limits, "scheduler", "") or ""

    @property
    def page_may_choose(self) -> bool:
        """Whether this page may name a scheduler of its own."""
        if self.limits is None:
            return True
        if self.logins:
            return self.admin
        return bool(getattr(self.limits, "page_scheduler", False))

    def resolve(self, typed: str) -> tuple[str | None, bool]:
        """(the scheduler address the runs go to, or None; whether they go to the server's shared cluster) for the
        address `typed` in the box. SchedulerRefused (nothing contacted) for an address this page may not name."""
        typed = (typed or "").strip()
        if typed and typed != self.server_address:
            if not self.page_may_choose:
                raise SchedulerRefused(ADMINS_ONLY if self.logins else NOT_ALLOWED)
            return typed, False
        if self.server_address:
            return self.server_address, False
        return None, self.limits is not None  # a server's pages share its one cluster (cluster.py)

    def words(self) -> str:
        """The box's placeholder: where empty sends the runs."""
        if self.server_address:
            return "this server's Dask scheduler"
        return "empty: this server's workers" if self.limits is not None else "empty: this machine"


__all__ = ["ADMINS_ONLY", "NOT_ALLOWED", "SchedulerChoice", "SchedulerRefused"]
