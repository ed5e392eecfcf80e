"""Routes a request without a login reaches, tried through raw HTTP as an attacker would: Panel's component resource
route (`/components/MODULE/CLASS/ATTRIBUTE/PATH`) must never import the module a URL names. Importing
`invlab.__main__` used to run the command line on the server's own arguments and replace the server with a
`panel serve` that exited at once; any module with work at import (`this`, `antigravity`, a file on the server's
path) ran it. A server without logins (the module's own) and the test process's class server with logins (the
`class_server` fixture, shared with test_logins.py) serve the module's tests."""
from __future__ import annotations

import http.client

import pytest

from tests.helpers.class_server import PROBE, serve_with_probe

pytestmark = pytest.mark.slow  # a server of its own starts, and the class server if it is not up (-m "not slow")

REFUSED = [
    "invlab.__main__/x/y/z",  # the command line, run on the server's own arguments
    "invlab.__main__/main/__css__/x",
    "invlab.cli/main/__css__/x",
    "invlab.cli.serve/cmd_serve/__css__/x",
    "os/system/__css__/x",  # loaded, but a function
    "subprocess/Popen/__css__/x",  # loaded, a class, not a Panel component
    "antigravity/x/__css__/x",  # opens a web browser when imported
    "this/x/__css__/x",  # prints the Zen of Python when imported
    f"{PROBE}/x/__css__/x",
    "invlab_no_such_module/X/__css__/x",
    "invlab..cli/main/__css__/x",
    "..invlab/x/__css__/x",
    "invlab.dashboard.app/Fast/_resources/css/x",  # the app file itself runs as a page, not an importable module
    "__main__/x/__css__/x",
]


@pytest.fixture(scope="module")
def server_without_logins(tmp_path_factory):
    with serve_with_probe(tmp_path_factory.mktemp("routes"), logins=False) as served:
        yield served


@pytest.fixture(params=["no logins", "logins"])
def server(request):
    """A served dashboard (tests/helpers/class_server.py's `Served`), without or with logins, whose path holds
    PROBE."""
    return request.getfixturevalue("server_without_logins" if request.param == "no logins" else "class_server")


def get(server, path: str) -> tuple[int, str]:
    """(status, body) of a GET without cookies, redirects not followed; status 0 when the server did not answer."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=120)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace")
    except (ConnectionError, http.client.HTTPException):
        return 0, ""
    finally:
        conn.close()


def test_no_component_url_imports_a_module_or_stops_the_server(server):
    statuses = {path: get(server, "/components/" + path)[0] for path in REFUSED}
    proc, log = server.proc, server.log.read_text()
    seen = {
        "not refused": {path: status for path, status in statuses.items() if status not in (403, 404)},
        "server stopped": proc.poll() is not None,
        "page answers": get(server, "/app")[0] in (200, 302),  # the page, or with logins the way to the login form
        "probe imported": (server.path / f"{PROBE}.imported").exists(),
        "'this' imported": "Beautiful is better than ugly" in log,
        "traceback logged": "Traceback" in log,
    }
    assert seen == {"not refused": {}, "server stopped": False, "page answers": True, "probe imported": False,
                    "'this' imported": False, "traceback logged": False}, (seen, log[-1500:])


def test_the_templates_own_component_resources_still_load(server):
    """The page's template names its stylesheets and script by this route (Panel writes them so when they are not
    among its bundled files): each loads, and a file it does not list stays refused."""
    from panel.io.resources import component_resource_path
    from panel.template.fast.list import FastListTemplate

    urls = [component_resource_path(FastListTemplate, "_css", css) for css in FastListTemplate._css]
    urls.append(component_resource_path(FastListTemplate, "_js", FastListTemplate._js))
    for url in urls:
        status, body = get(server, "/" + url)
        assert status == 200 and body.strip(), (url, status)
    assert get(server, "/components/panel.template.fast.list/FastListTemplate/_css/../../../io/server.py")[0] == 403
