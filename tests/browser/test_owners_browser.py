"""Owners on a class server: under `invlab serve --basic-auth` each user's page lists, opens and continues only that
user's runs; a user named with `--admin` sees every user's. Two students and a lecturer, each logged in through
Panel's /login form in a Chromium context of their own (their own cookies)."""
import json

from engine.train import RunStore
from pagekit import CHROMIUM_ARGS, chromium_path, poll, serve_dashboard

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
        return store.list_runs(1)[0].id


def test_each_user_sees_their_own_runs_and_the_admin_sees_all(tmp_path):
    from playwright.sync_api import sync_playwright

    users = tmp_path / "users.json"
    users.write_text(json.dumps(USERS))
    args = ["--basic-auth", str(users), "--cookie-secret", "s" * 32, "--admin", "lecturer"]
    with serve_dashboard(tmp_path / "served", args=args) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            alice = log_in(browser, url + SMALL, "alice")
            bob = log_in(browser, url + SMALL, "bob")
            alices = train_one(alice, tmp_path / "served" / "data" / "runs.sqlite")
            bobs = train_one(bob, tmp_path / "served" / "data" / "runs.sqlite")
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
        finally:
            browser.close()
    with RunStore(tmp_path / "served" / "data" / "runs.sqlite") as store:  # recorded in the store
        assert store.get_run(alices).owner == "alice" and store.get_run(bobs).owner == "bob"
