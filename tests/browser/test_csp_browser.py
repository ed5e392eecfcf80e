"""The served page's Content-Security-Policy: the page itself works under it with no violation (load, Start, every
page, the theme switch), while an inline event handler that reaches the page is blocked by the browser."""
import re
import time
import urllib.request

from invlab.dashboard.serving.csp import secure_page
from pagekit import browser_page, column_length, poll

# Every violation the browser reports, recorded before the page's own scripts run.
RECORD = ("window.__violations = [];"
          "document.addEventListener('securitypolicyviolation', (e) => window.__violations.push("
          "[e.violatedDirective, (e.target && e.target.outerHTML || '').slice(0, 200)]), true);")


def test_page_response_carries_a_fresh_nonce_on_every_script(served_app):
    policies = []
    for _ in range(2):
        with urllib.request.urlopen(served_app, timeout=60) as response:
            policy = response.headers["Content-Security-Policy"]
            page = response.read().decode()
        nonce = policy.split("'nonce-")[1].split("'")[0]
        assert page.count("<script") == page.count(f'<script nonce="{nonce}"') > 0
        assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
        assert " onclick=" not in page and " onchange=" not in page.lower()
        policies.append(policy)
    assert policies[0] != policies[1]  # a nonce per response


def test_secure_page_binds_the_templates_handlers_and_leaves_other_markup_alone():
    page, policy = secure_page('<html><body><span onclick="closeNav()" id="b"></span>'
                               '<fast-switch onChange="toggleLightDarkTheme(\'default\')"></fast-switch>'
                               '<b onclick="steal()">x</b><script>go()</script></body></html>')
    assert 'data-invlab-call="closeNav"' in page and 'data-invlab-arg="default"' in page
    assert '<b onclick="steal()">' in page  # not one of the template's own calls: not turned into a bound handler
    nonce = policy.split("'nonce-")[1].split("'")[0]
    assert f'<script nonce="{nonce}">go()' in page


def test_the_page_works_under_the_policy_and_an_injected_handler_is_blocked(served_app):
    with browser_page() as (page, errors):
        page.add_init_script(RECORD)
        page.goto(f"{served_app}?data.subset=200&data.test_subset=100&model.num_inducing=10&train.eval_every=5")
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: column_length(page, "elbo") >= 2, timeout=120)
        for tab in ("Lessons", "Deep kernel prior", "Compare", "Training"):
            page.locator(".bk-tab", has_text=tab).first.click()
            time.sleep(2)
        assert page.evaluate("() => window.__violations") == []
        # the template's own handler, bound by the nonced script, still works: the theme switch reloads dark
        page.locator("#theme-switch").click()
        page.wait_for_url(re.compile(r"[?&]theme=dark"), timeout=90_000)
        page.wait_for_load_state()
        assert page.evaluate("() => window.__violations") == []
        # markup that reaches the page later runs nothing
        page.evaluate("() => { window.__ran = false; const d = document.createElement('div');"
                      "d.innerHTML = '<img src=x onerror=\"window.__ran = true\">'; document.body.appendChild(d); }")
        poll(lambda: page.evaluate("() => window.__violations.length") > 0, timeout=10)
        assert page.evaluate("() => window.__ran") is False
        assert page.evaluate("() => window.__violations")[0][0] == "script-src-attr"
        assert errors == []
