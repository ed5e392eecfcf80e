"""Owners on a class server: under `invlab serve --basic-auth` each user's page lists, opens and continues only that
user's runs; a user named with `--admin` sees every user's. Two students and a lecturer, each logged in through
Panel's /login form in a Chromium context of their own (their own cookies). One class server and one Chromium serve
the module's tests."""
import json

import pytest

from invlab.train import RunStore
from pagekit import poll, serve_dashboard
from tests.helpers.chromium import shared_browser

SMALL = "?data.subset=200&data.test_subset=100&model.num_inducing=10&train.steps=20"
USERS = {"alice": "alice-secret", "bob": "bob-secret", "lecturer": "lecturer-secret"}


def field(page, name: str) -> str:
    return page.locator(f".invlab-status [data-field={name}]").first.inner_text()


def log_in(browser, url: str, user: str):
    """A page of its own browser context, logged in as `user` through the login form, showing `url`."""
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(url)
    page.locator("input[name=username]").fill(user)
    page.locator("input[name=password]").fill(USERS[user])
    page.locator("input[name=password]").press("Enter")
    page.get_by_role("button", name="▶ Start").wait_for(timeout=120_000)
    return page


def stored_runs(page) -> list[str]:
    page.locator(".bk-tab", has_text="Runs").first.click()
    return page.locator(".bk-input-group", has_text="Stored runs").locator("select").first.locator(
        "option").all_inner_texts()


def train_one(page, store_path) -> int:
    """Train the page's run to the end; its id (the newest run in the store)."""
    page.get_by_role("button", name="▶ Start").click()
    poll(lambda: field(page, "state") == "finished", timeout=180)
    with RunStore(store_path) as store:
        return store.runs.list(1)[0].id


@pytest.fixture(scope="module")
def class_server(tmp_path_factory):
    """(url, browser, store path) of `invlab serve --basic-auth users.json --cookie-secret S --admin lecturer`."""
    tmp = tmp_path_factory.mktemp("class")
    users = tmp / "users.json"
    users.write_text(json.dumps(USERS))
    args = ["--basic-auth", str(users), "--cookie-secret", "s" * 32, "--admin", "lecturer"]
    with serve_dashboard(tmp / "served", args=args) as url:
        browser = shared_browser()
        try:
            yield url, browser, tmp / "served" / "data" / "runs.sqlite"
        finally:
            for context in browser.contexts:  # each user's login, opened by the tests of this module
                context.close()


def test_each_user_sees_their_own_runs_and_the_admin_sees_all(class_server):
    url, browser, store_path = class_server
    alice = log_in(browser, url + SMALL, "alice")
    bob = log_in(browser, url + SMALL, "bob")
    alices = train_one(alice, store_path)
    bobs = train_one(bob, store_path)
    poll(lambda: any(t.startswith(f"#{alices} ") for t in stored_runs(alice)))
    poll(lambda: any(t.startswith(f"#{bobs} ") for t in stored_runs(bob)))
    assert not any(t.startswith(f"#{alices} ") for t in stored_runs(bob))
    assert not any(t.startswith(f"#{bobs} ") for t in stored_runs(alice))

    bob.goto(url + f"?run={alices}")  # by id, in a link: refused with the reason
    poll(lambda: "belongs to another user" in field(bob, "message"))
    assert f"run {alices} belongs to another user of this server" in field(bob, "message")
    assert field(bob, "step") == "0"  # nothing of alice's run was shown

    lecturer = log_in(browser, url + SMALL, "lecturer")
    poll(lambda: {f"#{alices} ", f"#{bobs} "} <= {t[:len(f"#{alices} ")] for t in stored_runs(lecturer)})
    listed = stored_runs(lecturer)
    assert any(t.startswith(f"#{alices} ") and "(alice)" in t for t in listed), listed
    assert any(t.startswith(f"#{bobs} ") and "(bob)" in t for t in listed), listed
    lecturer.goto(url + f"?run={bobs}")  # the admin opens anyone's run
    poll(lambda: f"opened stored run {bobs}" in field(lecturer, "message"))
    with RunStore(store_path) as store:  # recorded in the store
        assert store.runs.get(alices).owner == "alice" and store.runs.get(bobs).owner == "bob"
    for page in (alice, bob, lecturer):
        page.context.close()


# Every cookie Panel's auth layer reads, as a page could write them in its own browser (none signed).
FORGED = {"is_guest": "1", "access_token": "forged", "id_token": "forged", "refresh_token": "forged",
          "oauth_expiry": "9999999999", "user": "guest"}


def test_no_cookie_a_page_writes_changes_who_owns_a_run(class_server):
    """bob and alice each add Panel's `is_guest=1` (and every other cookie its auth reads but `user`, which the login
    signs) in their own browser: bob's run is still bob's, alice with the same cookies neither lists nor opens it,
    and a forged unsigned `user` cookie gets the login form, not someone's page."""
    url, browser, store_path = class_server
    pages = {}
    for name in ("bob", "alice"):
        page = log_in(browser, url + SMALL, name)
        page.context.add_cookies([{"name": k, "value": v, "url": url} for k, v in FORGED.items() if k != "user"])
        page.reload()
        page.get_by_role("button", name="▶ Start").wait_for(timeout=120_000)
        pages[name] = page
    bobs = train_one(pages["bob"], store_path)
    with RunStore(store_path) as store:
        assert store.runs.get(bobs).owner == "bob"  # was: 'guest', listed and continued by anyone with the cookie
    alice = pages["alice"]
    assert not any(t.startswith(f"#{bobs} ") for t in stored_runs(alice))
    alice.goto(url + f"?run={bobs}")
    poll(lambda: "belongs to another user" in field(alice, "message"))
    assert field(alice, "step") == "0"

    stranger = browser.new_context().new_page()  # no login, every cookie forged, `user` unsigned
    stranger.context.add_cookies([{"name": k, "value": v, "url": url} for k, v in FORGED.items()])
    stranger.goto(url + SMALL)
    stranger.locator("input[name=username]").wait_for(timeout=60_000)  # the login form, not a page as 'guest'
    assert stranger.get_by_role("button", name="▶ Start").count() == 0
    for page in (*pages.values(), stranger):
        page.context.close()
