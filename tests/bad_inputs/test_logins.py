"""Logins on a class server (`invlab serve --basic-auth users.json --cookie-secret S`), tried through raw HTTP as an
attacker would: a copied cookie after its user logged out, a user taken out of the users file, a login posted from
another site, and password guessing. The class server of the test process (the `class_server` fixture, shared with
test_unauthenticated_routes.py) serves the module's tests."""
from __future__ import annotations

import http.client
import json
import os
import re
import urllib.parse
from http.cookies import SimpleCookie

import pytest

from tests.helpers.class_server import USERS


@pytest.fixture
def server(class_server):
    """The class server (tests/helpers/class_server.py): its users file holds USERS."""
    return class_server


def request(server, method: str, path: str, cookies: dict | None = None, form: dict | None = None,
            headers: dict | None = None):
    """(status, headers, body, cookies the response set) of one request, redirects not followed."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=120)
    head = dict(headers or {})
    if cookies:
        head["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
    body = None
    if form is not None:
        body = urllib.parse.urlencode(form)
        head["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        conn.request(method, path, body=body, headers=head)
        resp = conn.getresponse()
        text = resp.read().decode("utf-8", "replace")
    finally:
        conn.close()
    jar = SimpleCookie()
    for line in resp.headers.get_all("Set-Cookie") or []:
        jar.load(line)
    set_cookies = {name: morsel.value for name, morsel in jar.items()}
    return resp.status, resp.headers, text, set_cookies


def log_in(server, user: str, password: str):
    """(status, body, cookies after) of the login form filled in as a browser would: the form's own page first."""
    _, _, page, cookies = request(server, "GET", "/login")
    form = {"username": user, "password": password}
    token = re.search(r'name="_xsrf" value="([^"]+)"', page)
    if token:
        form["_xsrf"] = token.group(1)
    status, _, body, set_cookies = request(server, "POST", "/login", cookies=cookies, form=form)
    return status, body, {**cookies, **{k: v for k, v in set_cookies.items() if v}}


def page_status(server, cookies: dict) -> tuple[int, str]:
    """(status, where it redirects) of the dashboard's page asked for with `cookies`."""
    status, headers, _, _ = request(server, "GET", "/app", cookies=cookies)
    return status, headers.get("Location") or ""


def logged_in(server, user: str) -> dict:
    status, body, cookies = log_in(server, user, USERS[user])
    assert status == 302 and "user" in cookies, (status, body[-500:])
    assert page_status(server, cookies)[0] == 200
    return cookies


def test_a_logout_revokes_the_cookie(server):
    """A copy of alice's cookies taken before she logged out gets the login form afterwards; she logs in again."""
    copy = logged_in(server, "alice")
    request(server, "GET", "/logout", cookies=copy)
    status, where = page_status(server, copy)
    assert status == 302 and "/login" in where, (status, where)  # was: 200, the page of alice
    logged_in(server, "alice")  # a new login after the logout works


def test_a_user_taken_out_of_the_users_file_gets_the_login_form(server):
    """bob, logged in, removed from the users file: his cookie no longer opens the page, nor can he log in."""
    cookies = logged_in(server, "bob")
    users_file = server.users
    before = users_file.stat().st_mtime_ns
    users_file.write_text(json.dumps({k: v for k, v in USERS.items() if k != "bob"}))
    os.utime(users_file, ns=(before + 2_000_000_000, before + 2_000_000_000))  # a changed file, whatever the clock
    try:
        status, where = page_status(server, cookies)
        assert status == 302 and "/login" in where, (status, where)  # was: 200 for a day
        status, _, after = log_in(server, "bob", USERS["bob"])
        assert "user" not in after or page_status(server, after)[0] != 200
    finally:
        users_file.write_text(json.dumps(USERS))
        os.utime(users_file, ns=(before + 4_000_000_000, before + 4_000_000_000))
    logged_in(server, "bob")  # back in the file: he logs in again


def test_a_login_posted_without_the_forms_token_is_refused(server):
    """A login posted from another site (no token, or a made-up one) is refused with 403 and sets no login cookie;
    the form the server serves carries its token."""
    credentials = {"username": "alice", "password": USERS["alice"]}
    evil = {"Origin": "https://evil.example", "Referer": "https://evil.example/"}
    status, _, _, set_cookies = request(server, "POST", "/login", form=credentials, headers=evil)
    assert status == 403 and not set_cookies.get("user"), (status, set_cookies)  # was: 302, logged in
    _, _, page, _ = request(server, "GET", "/login")
    assert 'name="_xsrf"' in page
    attackers = re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)  # a token of the attacker's own
    victims = request(server, "GET", "/login")[3]  # the cookies the victim's browser holds from its own visit
    for form, cookies in ((credentials, victims), ({**credentials, "_xsrf": attackers}, victims)):
        status, _, _, set_cookies = request(server, "POST", "/login", cookies=cookies, form=form, headers=evil)
        assert status == 403 and not set_cookies.get("user"), (status, set_cookies)


def test_wrong_passwords_lock_a_user_out_for_a_while(server):
    """After five wrong passwords for carol, a sixth and even her right one are refused (429, saying why); for dave,
    a success between wrong passwords starts the count again."""
    for _ in range(5):
        status, _, cookies = log_in(server, "carol", "guess")
        assert not cookies.get("user")
    status, body, cookies = log_in(server, "carol", "guess")
    assert status == 429 and "too many wrong passwords" in body.lower(), (status, body[-500:])  # was: 302, no limit
    status, body, cookies = log_in(server, "carol", USERS["carol"])  # the right password, during the lock-out
    assert status == 429 and not cookies.get("user"), status
    for _ in range(2):
        for _ in range(4):
            assert not log_in(server, "dave", "guess")[2].get("user")
        logged_in(server, "dave")  # the fifth try is right: in, and the count starts again


def test_a_shared_password_lets_any_name_in_and_compares_in_constant_time(tmp_path):
    """`--basic-auth PASSWORD` (no file): any user name with the shared password, never another password; a users
    file that stops being a JSON object of passwords lets nobody in (rather than the wrong people)."""
    from invlab.dashboard.serving.login_record import Users

    shared = Users("class-pw")
    assert shared.check("anyone", "class-pw") and shared.known("anyone")
    assert not shared.check("anyone", "class-p") and not shared.check("anyone", "class-pw ")
    users_file = tmp_path / "users.json"
    users_file.write_text(json.dumps({"alice": "a"}))
    listed = Users(str(users_file))
    assert listed.check("alice", "a") and not listed.check("alice", "b") and not listed.check("bob", "a")
    users_file.write_text('{"alice": ')  # half-written
    os.utime(users_file, ns=(1, 1))
    assert not listed.known("alice") and not listed.check("alice", "a")


def test_a_locked_out_user_is_let_in_again_after_the_lock(tmp_path):
    """The lock-out lasts LOCKED_S, then the user may try again; it is kept in the data directory's record."""
    from invlab.dashboard.serving.login_record import LOCKED_S, LoginRecord

    now = [1000.0]
    record = LoginRecord(tmp_path / "logins.sqlite", clock=lambda: now[0])
    for _ in range(3):
        record.wrong("user:carol", 3)
    assert record.locked_for("user:carol", "address:1.2.3.4") == LOCKED_S
    assert record.locked_for("user:dave") == 0
    now[0] += LOCKED_S + 1
    assert record.locked_for("user:carol") == 0
    record.end("login-id", 60)
    assert LoginRecord(tmp_path / "logins.sqlite").ended("login-id")  # another process's view of the record
    now[0] += 61
    record.end("another", 60)  # an ended login past its cookie's lifetime is dropped from the record
    assert not record.ended("login-id") and record.ended("another")
