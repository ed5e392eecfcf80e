"""Routes a request without a login reaches, tried through raw HTTP as an attacker would: Panel's component resource
route (`/components/MODULE/CLASS/ATTRIBUTE/PATH`) must never import the module a URL names. Importing
`invlab.__main__` used to run the command line on the server's own arguments and replace the server with a
`panel serve` that exited at once; any module with work at import (`this`, `antigravity`, a file on the server's
path) ran it. One server without logins and one with serve the module's tests."""
from __future__ import annotations

import http.client
import json
import urllib.parse

import pytest

from invlab.dashboard.serving.process import serve_dashboard_process

pytestmark = pytest.mark.slow  # two servers of its own start (-m "not slow" leaves it out)

# A module on the server's path that leaves a mark when something imports it.
PROBE = "invlab_import_probe"
PROBE_SOURCE = "import pathlib\npathlib.Path(__file__).with_suffix('.imported').write_text('imported')\n"

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


@pytest.fixture(scope="module", params=["no logins", "logins"])
def server(request, tmp_path_factory):
    """(host, port, process, its folder) of one served dashboard, with or without logins, whose path holds PROBE."""
    tmp = tmp_path_factory.mktemp("routes")
    (tmp / "path").mkdir()
    (tmp / "path" / f"{PROBE}.py").write_text(PROBE_SOURCE)
    args = []
    if request.param == "logins":
        (tmp / "users.json").write_text(json.dumps({"alice": "alice-pw"}))
        args = ["--basic-auth", str(tmp / "users.json"), "--cookie-secret", "s" * 32]
    with serve_dashboard_process(tmp / "served", args=args, extra_env={"PYTHONPATH": str(tmp / "path")}) as (url, proc):
        parts = urllib.parse.urlsplit(url)
        yield parts.hostname, parts.port, proc, tmp


def get(server, path: str) -> tuple[int, str]:
    """(status, body) of a GET without cookies, redirects not followed; status 0 when the server did not answer."""
    conn = http.client.HTTPConnection(server[0], server[1], timeout=120)
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
    proc, tmp = server[2], server[3]
    log = (tmp / "served" / "server.log").read_text()
    seen = {
        "not refused": {path: status for path, status in statuses.items() if status not in (403, 404)},
        "server stopped": proc.poll() is not None,
        "page answers": get(server, "/app")[0] in (200, 302),  # the page, or with logins the way to the login form
        "probe imported": (tmp / "path" / f"{PROBE}.imported").exists(),
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
