"""Who a served page belongs to: the logged-in user, read only from the identity the server signed.

On a server with logins (`invlab serve --basic-auth FILE --cookie-secret S`, or OAuth), the login form or provider sets
a `user` cookie signed with the server's cookie secret; the server checks that signature before it lets a page in
(and, under `--basic-auth`, that the login was not ended by a logout and its user is still in the users file:
dashboard/serving/logins.py).
A page's owner (the owner of every run it stores, and whose runs it may list, open and continue) is that signed
name and nothing else. Panel's own `pn.state.user` also reads an unsigned `is_guest` cookie, which any page can
write in its browser, and answers "guest" for it; that would let a cookie choose who owns a run, so it is not used.
With logins on there is no guest: a page whose signed identity cannot be read is not built. Without logins there
are no owners (every page sees every run), whatever cookies the browser sends.
"""
from __future__ import annotations

import os

from invlab.errors import InvlabError


class IdentityError(InvlabError):
    """A page of a server with logins whose signed user cannot be read: it is not built."""


def logins_on() -> bool:
    """Whether this server asks people to log in (`invlab serve --basic-auth`, Panel's basic auth or an OAuth
    provider is configured)."""
    import panel as pn

    from .logins import LOGINS_ENV

    return bool(os.environ.get(LOGINS_ENV) or pn.config.basic_auth or pn.config.oauth_provider)


def signed_user(cookies: dict | None = None) -> str | None:
    """The logged-in user of the current page: the name in its `user` cookie when the server's cookie secret signed
    it (and it has not expired), else None. `cookies` defaults to those of the request that opened the page. No
    other cookie (`is_guest`, tokens) is read."""
    import panel as pn
    from tornado.web import decode_signed_value

    cookies = pn.state.cookies if cookies is None else cookies
    value, secret = (cookies or {}).get("user"), pn.config.cookie_secret
    if not value or not secret:
        return None
    decoded = decode_signed_value(secret, "user", value, max_age_days=pn.config.oauth_expiry)
    if decoded is None:
        return None
    name = decoded.decode("utf-8", "replace")
    return name or None


def page_owner(cookies: dict | None = None) -> str | None:
    """The owner of the current page's runs: the signed user on a server with logins (an `IdentityError` when there
    is none), None without logins. `cookies` defaults to those of the request that opened the page."""
    if not logins_on():
        return None
    user = signed_user(cookies)
    if user is None:
        raise IdentityError("this server asks people to log in, and this page's login could not be read (it expired, "
                            "or the page was opened without logging in); log in again at /login, then reload")
    return user
