"""Every page and every lesson, loaded again and again while another page trains, asks nothing of any host but the
dashboard's own server and breaks no rule of its Content-Security-Policy: Panel's and Bokeh's scripts, stylesheets and
theme come from the installed packages, never a CDN, on every load (classrooms and clusters are often offline).

A load is a fresh browser context (no cache) opening the page's link and waiting for its tabs, its lesson banner or
its Compare form; requests to any other host are refused and counted."""
import os
import re
import time

from invlab.dashboard.lessons.catalogue import LESSONS, lesson_query
from pagekit import browser_page, panel_script_late, poll, serve_dashboard
from tests.helpers.chromium import browser_context

# Each page and lesson this many times: once in the suite (about two minutes on 2 cores), more by hand, e.g.
# INVLAB_OFFLINE_ROUNDS=30 (the CDN requests seen once came on about 4 loads in 25).
ROUNDS = int(os.environ.get("INVLAB_OFFLINE_ROUNDS", "1"))
LINKS = ["", "?model=svgp&data.subset=200", "?page=compare", "?page=prior", "?theme=dark&model=convolutional",
         *(lesson_query(lesson) for lesson in LESSONS)]
# Every Content-Security-Policy violation, recorded before the page's own scripts run.
RECORD = ("window.__violations = [];"
          "document.addEventListener('securitypolicyviolation', (e) => window.__violations.push("
          "e.violatedDirective + ' ' + (e.blockedURI || '')), true);")


def _own(url: str, server: str) -> bool:
    return url.startswith(_own_prefixes(server))


def _own_prefixes(server: str) -> tuple[str, ...]:
    return server, server.replace("http://", "ws://"), "data:", "blob:", "about:"


def not_own(server: str) -> re.Pattern:
    """The requests the guard is handed: those to anywhere but `server` (and data:, blob:, about:). Playwright
    matches the pattern in its driver, so the page's own requests never wait for this process's handler (which
    runs only while a call of the synchronous API waits on the browser)."""
    return re.compile("^(?!" + "|".join(re.escape(prefix) for prefix in _own_prefixes(server)) + ")")


def test_every_page_and_lesson_loads_from_this_server_alone_on_every_load(served_app):
    server = served_app.split("/app")[0]
    with browser_page() as (trainer, trainer_errors):  # a page training meanwhile, as in a class
        trainer.goto(f"{served_app}?data.subset=200&data.test_subset=100&model.num_inducing=10&train.steps=100000")
        trainer.get_by_role("button", name="▶ Start").click(timeout=90_000)
        refused, violations, loads = [], [], 0
        for _ in range(ROUNDS):
            for link in LINKS:
                with browser_context(viewport={"width": 1280, "height": 720}) as context:
                    def guard(route, link=link):
                        if _own(route.request.url, server):
                            route.continue_()
                        else:
                            refused.append((link, route.request.url))
                            route.abort()

                    context.route(not_own(server), guard)
                    page = context.new_page()
                    page.add_init_script(RECORD)
                    page.goto(served_app + link)
                    page.locator(".bk-tab").first.wait_for(timeout=90_000)
                    time.sleep(0.5)  # what a page asks for after its first draw (design stylesheets, icons)
                    violations += [(link, v) for v in page.evaluate("() => window.__violations")]
                    loads += 1
        poll(lambda: trainer.locator(".invlab-status [data-field=state]").first.inner_text() == "running")
    assert loads == ROUNDS * len(LINKS)
    assert refused == [], f"{len(refused)} requests to other hosts in {loads} loads: {refused[:5]}"
    assert violations == [], f"{len(violations)} CSP violations in {loads} loads: {violations[:5]}"
    assert trainer_errors == []


def test_a_page_whose_browser_connects_late_keeps_its_session_and_the_packaged_styles(served_app):
    """On a busy server (a class pressing Start together) or a slow network the browser can take longer than the
    unused-session lifetime to load the scripts and open the page's websocket. The session the page was built for
    used to be ended unseen meanwhile and built again when the browser connected, without its stylesheet links
    pointed at this server: the page asked a CDN for Panel's theme and loading styles (unstyled offline) and the
    whole page was built twice. Here Panel's script arrives a few seconds after the lifetime has run out."""
    with browser_context(viewport={"width": 1280, "height": 720}) as context:
        panel_script_late(context)
        page = context.new_page()
        page.add_init_script(RECORD)
        errors = []
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.goto(served_app + "?model=svgp&data.subset=200&data.test_subset=100")
        page.locator(".bk-tab").first.wait_for(timeout=90_000)
        poll(lambda: page.locator(".invlab-status [data-field=state]").first.inner_text() == "idle")
        time.sleep(0.5)
        violations = page.evaluate("() => window.__violations")
    assert violations == [], f"{len(violations)} CSP violations: {violations[:3]}"
    assert errors == []


def test_a_cdn_in_the_users_environment_does_not_reach_the_page(tmp_path):
    """`BOKEH_RESOURCES=cdn` left in the environment (a notebook set-up, say) would make Bokeh and Panel write CDN
    addresses into every page; `invlab serve` serves the installed files whatever it says."""
    import urllib.request

    with serve_dashboard(tmp_path, extra_env={"BOKEH_RESOURCES": "cdn"}) as url:
        with urllib.request.urlopen(url, timeout=120) as response:
            page = response.read().decode()
    assert "static/extensions/panel" in page and "cdn." not in page, [
        line.strip()[:120] for line in page.splitlines() if "cdn." in line][:3]


def test_the_guard_is_handed_every_request_to_another_host_and_none_to_the_server():
    server = "http://127.0.0.1:5006"
    pattern = not_own(server)
    assert not any(pattern.search(url) for url in (server + "/app?x=1", "ws://127.0.0.1:5006/app/ws", "data:,x",
                                                   "blob:http://127.0.0.1:5006/u", "about:blank"))
    assert all(pattern.search(url) for url in ("https://cdn.bokeh.org/bokeh.min.js", "http://127.0.0.1:5007/app",
                                               "http://localhost:5006/app", "https://fonts.googleapis.com/css"))
