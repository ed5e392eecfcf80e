"""Owners on a server with logins: a run or sweep records the user who started it, and a store opened for a user
lists and opens only that user's (an admin's store, or one opened without a user, sees all).

The dashboard opens its store with the page's logged-in user (`pn.state.user` under `--basic-auth` or OAuth) and
whether `invlab serve --admin USER` named them; the command line opens it without a user, so nothing changes there.
Runs and sweeps stored before owners were recorded (or by the command line) have none: only admins see them on a
server with logins.
"""
from __future__ import annotations

from .faults import RunStoreError


class Owners:
    """Whose runs and sweeps a store shows (`store.owners`): its `owner` (recorded on new runs and sweeps; None: no
    logins) and whether that user is an `admin` (sees every user's)."""

    def __init__(self, owner: str | None = None, admin: bool = False):
        """`owner`: the logged-in user the store is opened for; `admin`: that user sees every user's runs."""
        self.owner, self.admin = owner, bool(admin)

    @property
    def restricted(self) -> bool:
        """Whether this store shows only its owner's runs and sweeps."""
        return self.owner is not None and not self.admin

    def owned(self, tail: str, args: tuple = ()) -> tuple[str, tuple]:
        """`tail` (an ORDER BY / LIMIT clause) limited to the owner's rows when restricted."""
        if not self.restricted:
            return tail, args
        return f"WHERE owner = ? {tail}", (self.owner, *args)

    def check(self, what: str, key: int, owner: str | None) -> None:
        """Refuse a run or sweep (`what` `key`) that belongs to another user (for a restricted store)."""
        if self.restricted and owner != self.owner:
            raise RunStoreError(f"{what} {key} belongs to another user of this server, so it is not opened here; you "
                                f"can open your own {what}s (those listed here), and the server's admins every "
                                f"user's")
