"""Panel's component resource route (`/components/MODULE/CLASS/ATTRIBUTE/PATH`) never imports what a URL names.

Panel serves a component's own stylesheets and scripts through that route, and resolves MODULE with
`importlib.import_module` before any other check, with no login check at all: a request from anyone who can reach
the server imported any module on its path, running whatever that module does at import (`this` prints, `antigravity`
opens a browser; a module that runs a command line would run it on the server's own arguments). `install()` puts a
check in front of Panel's own: MODULE must be a module this server has already imported (a dotted name of
identifiers), CLASS one of its own attributes that is a Panel component class (a viewable, template, design, theme
or Bokeh model); anything else is answered 404 without importing anything. What the route serves is then still
Panel's decision (only files the component lists, under its module's folder).

The app file calls `install()` at its top, and `invlab serve` builds one page before the server listens (`--warm`),
so the check is in place before the first request; it is once per process and idempotent.
"""
from __future__ import annotations

import sys

from tornado.web import HTTPError


def _component_bases() -> tuple[type, ...]:
    from bokeh.model import Model
    from panel.io.resources import ResourceComponent
    from panel.theme.base import Theme
    from panel.viewable import Viewable

    return Viewable, ResourceComponent, Theme, Model


def refusal(path: str) -> str | None:
    """Why the component route must not serve `path` (MODULE/CLASS/ATTRIBUTE/...), or None when MODULE is already
    imported and CLASS is a Panel component class defined in it (nothing is imported to find out)."""
    parts = path.split("/")
    if len(parts) < 4:
        return "malformed component URL"
    module_name, class_name = parts[0], parts[1]
    if not all(part.isidentifier() for part in module_name.split(".")) or not class_name.isidentifier():
        return "not a module and class name"
    module = sys.modules.get(module_name)
    if module is None:
        return "no such component"  # never imported here: the route does not import it either
    # The module's own namespace, not getattr: a module-level __getattr__ may import or compute on demand.
    component = vars(module).get(class_name)
    if not (isinstance(component, type) and issubclass(component, _component_bases())):
        return "no such component"
    return None


def install() -> None:
    """Check every request of Panel's component resource route (`refusal`) before Panel resolves it; once per
    process."""
    from panel.io.server import ComponentResourceHandler

    if getattr(ComponentResourceHandler, "_invlab_guarded", False):
        return
    parse_url_path = ComponentResourceHandler.parse_url_path

    def guarded_parse_url_path(self, path: str) -> str:
        problem = refusal(path)
        if problem is not None:
            raise HTTPError(404, problem)
        return parse_url_path(self, path)

    ComponentResourceHandler.parse_url_path = guarded_parse_url_path
    ComponentResourceHandler._invlab_guarded = True
