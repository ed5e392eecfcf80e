"""The login form, logout and login check of a class server (`invlab serve --basic-auth FILE|PASSWORD`).

Panel's basic auth (panel/auth.py) signs a `user` cookie at login and trusts it for a day: a logout only asks the
browser to forget it, a user taken out of the users file keeps coming in, the form posts without a token (another
site can log a visitor in), and passwords can be guessed without limit. `LoginsProvider` is Panel's
`BasicAuthProvider` with its own handlers:

- each login gets a random id, signed in a second cookie bound to the user's name; a logout records the id as ended
  (`LoginRecord`), and `get_user` refuses an ended login, a user no longer in the users file, and a `user` cookie
  without its login;
- the form carries Tornado's XSRF token (`_xsrf`, checked against its cookie); a post without it is refused (403);
- wrong passwords are counted per user name and per address: past a few within minutes, logins for that user (or
  from that address) are refused for a while (429), the right password too; a right one starts the count again.

`invlab serve` installs it through Bokeh's `--auth-module` (dashboard/serving/_login_module.py) and hands it
`--basic-auth`'s value in INVLAB_BASIC_AUTH; Panel's `user` cookie stays the user's name, so `identity.signed_user`
and Panel's own bookkeeping read it as before.
"""
from __future__ import annotations

import html
import json
import math
import os
import secrets

from panel.auth import BasicAuthProvider, BasicLoginHandler, LogoutHandler, _validate_next_url
from panel.config import config
from panel.io.state import state
from tornado.web import HTTPError
from tornado.websocket import WebSocketHandler

from .login_record import MAX_WRONG_PER_ADDRESS, MAX_WRONG_PER_USER, LoginRecord, Users

LOGINS_ENV = "INVLAB_BASIC_AUTH"  # `invlab serve --basic-auth`'s value: a users file or one shared password
LOGIN_COOKIE = "invlab_login"  # signed [login id, user name]: which login this is, so a logout can end it
WRONG = "Wrong user name or password."


def _lifetime_s() -> float:
    return float(config.oauth_expiry) * 86400.0


class LoginsProvider(BasicAuthProvider):
    """Panel's basic auth with logins a logout ends, users read from the current users file, a form token and a
    limit on wrong passwords. `source`: a users file or a shared password; `record`: where ended logins and
    wrong passwords are kept."""

    def __init__(self, source: str, record: LoginRecord, **kwargs):
        super().__init__(**kwargs)
        self.users, self.record = Users(source), record

    def user_of(self, handler) -> str | None:
        """The user a request is logged in as: its signed `user` cookie, with the signed login of the same name
        that no logout ended, of a user still let in; None otherwise."""
        if not handler.application.settings.get("cookie_secret"):
            return None
        days = config.oauth_expiry
        user, login = handler.get_secure_cookie("user", max_age_days=days), handler.get_secure_cookie(
            LOGIN_COOKIE, max_age_days=days)
        if not user or not login:
            return None
        try:
            login_id, name = json.loads(login)
        except ValueError:
            return None
        user = user.decode("utf-8", "replace")
        if name != user or self.record.ended(login_id) or not self.users.known(user):
            return None
        return user

    @property
    def get_user(self):
        """The function Bokeh calls for each request: the logged-in user, or None (the login form)."""
        def get_user(request_handler):
            user = self.user_of(request_handler)
            if user and isinstance(request_handler, WebSocketHandler):
                state._active_users[user] += 1  # Panel's count of connected pages, as its own provider keeps it
            return user
        return get_user

    @property
    def login_handler(self):
        """The handler of the login form (GET) and of its post."""
        LoginHandler.provider, LoginHandler._login_endpoint = self, self._login_endpoint
        return LoginHandler

    @property
    def logout_handler(self):
        """The handler that ends a login."""
        EndLoginHandler.provider, EndLoginHandler._login_endpoint = self, self._login_endpoint
        EndLoginHandler._logout_template = self._logout_template
        return EndLoginHandler


class LoginHandler(BasicLoginHandler):
    """The login form with its XSRF token; its post checks the token, the lock-out and the password."""

    provider: LoginsProvider

    def _cookie(self, name: str, value: str, signed: bool = False) -> None:
        options = {"httponly": True, "path": config.cookie_path or "/", "samesite": "Lax",
                   "secure": self.request.protocol == "https"}
        if signed:
            self.set_secure_cookie(name, value, expires_days=config.oauth_expiry, **options)
        else:
            self.set_cookie(name, value, **options)

    def form(self, message: str = "", status: int = 200) -> None:
        """Answer with the form (a fresh token), showing `message` (escaped) when there is one."""
        self.set_status(status)
        self.set_header("Cache-Control", "no-store")
        self.write(LOGIN_PAGE.format(action=html.escape("." + self._login_endpoint), xsrf=self.xsrf_form_html(),
                                     message=html.escape(message)))

    def get(self):
        """The login form; the page asked for before it (`next`) is where a login goes."""
        next_url = _validate_next_url(self.get_argument("next", state.base_url))
        if next_url:
            self._cookie("next_url", next_url)
        if not self.application.settings.get("cookie_secret"):
            return self.form("This server cannot log anyone in: it was started without --cookie-secret. Restart "
                             "it with --cookie-secret and a long random value.", 500)
        self.form()

    def post(self):
        """Log in: refused without the form's token (403), while the user or address is locked out (429), and for a
        wrong password (the form again, counted)."""
        try:
            self.check_xsrf_cookie()
        except HTTPError:
            return self.form("This form has expired or was sent from another site: it was refused. Log in again "
                             "from this page.", 403)
        user, password = self.get_argument("username", "")[:200], self.get_argument("password", "")
        record, keys = self.provider.record, (f"user:{user}", f"address:{self.request.remote_ip}")
        wait = record.locked_for(*keys)
        if wait > 0:
            return self.form(f"Too many wrong passwords for this user or from this address: logins are refused for "
                             f"{math.ceil(wait / 60)} more minute(s). Ask your lecturer if you forgot the password.",
                             429)
        if not user or not self.provider.users.check(user, password):
            record.wrong(keys[0], MAX_WRONG_PER_USER)
            record.wrong(keys[1], MAX_WRONG_PER_ADDRESS)
            return self.form(WRONG)
        record.forget(keys[0])
        self.clear_cookie("is_guest")
        self._cookie("user", user, signed=True)
        self._cookie(LOGIN_COOKIE, json.dumps([secrets.token_urlsafe(24), user]), signed=True)
        self.redirect(_validate_next_url(self.get_cookie("next_url", state.base_url)))


class EndLoginHandler(LogoutHandler):
    """Logout: the login is recorded as ended (a copy of its cookies is refused from now on), then Panel's logout."""

    provider: LoginsProvider

    def get(self):
        """End this request's login, clear its cookies and show Panel's logout page."""
        secret = self.application.settings.get("cookie_secret")
        login = secret and self.get_secure_cookie(LOGIN_COOKIE, max_age_days=config.oauth_expiry)
        if login:
            try:
                self.provider.record.end(json.loads(login)[0], _lifetime_s())
            except (ValueError, IndexError, TypeError):
                pass  # not a login of ours: nothing to end
        self.clear_cookie(LOGIN_COOKIE, path=config.cookie_path or "/")
        super().get()


def provider_from_env(environ=os.environ) -> LoginsProvider:
    """The provider `invlab serve --basic-auth` asks for: its value from INVLAB_BASIC_AUTH, the record in the data
    directory."""
    from invlab.settings import data_dir

    source = environ.get(LOGINS_ENV)
    if not source:
        raise RuntimeError(f"{LOGINS_ENV} is not set: start the server with `invlab serve --basic-auth FILE` "
                           "(a JSON file of user names and passwords) or a shared password")
    return LoginsProvider(source, LoginRecord(data_dir() / "logins.sqlite"))


# The page's own form: no request beyond this server (Panel's loads its logo and icon from a CDN).
LOGIN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Invariance Lab | Log in</title>
<style>
body {{ font-family: system-ui, sans-serif; background: #fafafa; display: flex; align-items: center;
       justify-content: center; min-height: 100vh; margin: 0; }}
form {{ background: #fff; border: 1px solid #ddd; padding: 2em; width: 320px; }}
h1 {{ font-size: 1.2em; text-align: center; }}
input {{ display: block; box-sizing: border-box; width: 100%; padding: 10px; margin: 0 0 1em; border: 1px solid #ccc; }}
button {{ width: 100%; padding: 10px; background: #107bba; color: #fff; border: 0; }}
.message {{ color: #b00020; font-weight: bold; }}
</style></head>
<body><form action="{action}" method="post">
<h1>Invariance Lab: log in</h1>
<p class="message" role="alert">{message}</p>
{xsrf}
<input name="username" type="text" autocapitalize="off" autocorrect="off" placeholder="user name"
 aria-label="user name" autocomplete="username">
<input name="password" type="password" placeholder="password" aria-label="password" autocomplete="current-password">
<button type="submit">Log in</button>
</form></body></html>
"""
