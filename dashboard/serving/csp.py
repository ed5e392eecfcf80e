"""The served page's Content-Security-Policy: only this server's own scripts run — no inline event handler, no
`javascript:` link, no script or request to another host — whatever HTML might reach the page.

Bokeh and Panel write their page with inline `<script>` blocks (the document, the embed call, the template's own
functions), so a policy of `'self'` alone would stop the page itself; `'unsafe-inline'` would let an injected
`<img onerror=…>` run too. Instead each page response gets a fresh nonce on every `<script>` tag the server wrote,
and `'strict-dynamic'` lets those scripts load Bokeh's and Panel's bundles; `'unsafe-eval'` stays because Bokeh
compiles `CustomJS` callbacks and Panel its `jscallback`s with `new Function`. Markup added later (a pane's HTML
set through the websocket) gets no nonce, so nothing in it runs. The template's own `onclick` / `onchange`
attributes (the sidebar, full-screen and theme buttons of Panel's Fast template) are bound by a nonced script
instead. Styles stay `'unsafe-inline'`: Bokeh lays out its views with inline styles, and a style runs no code.

`install()` wraps Panel's document handler once per process (the app file calls it; idempotent); the same wrapper
adds the page's one script of its own (`css_reads`) before the nonces are given out.
"""
from __future__ import annotations

import re
import secrets

from invlab.dashboard.serving import css_reads

POLICY = ("default-src 'self'; "
          "script-src 'nonce-{nonce}' 'strict-dynamic' 'unsafe-eval'; "
          "style-src 'self' 'unsafe-inline'; "
          "img-src 'self' data: blob:; "
          "font-src 'self' data:; "
          "connect-src 'self'; "
          "worker-src 'self' blob:; "
          "object-src 'none'; "
          "base-uri 'none'; "
          "form-action 'self'; "
          "frame-ancestors 'self'")

_SCRIPT_TAG = re.compile(r"<script(?=[\s>])", re.IGNORECASE)
# The Fast template's inline handlers, each a call of one of its own global functions with no argument, `this` or
# one quoted word: onclick="closeNav()", onclick="toggleFullScreen(this)", onChange="toggleLightDarkTheme('x')".
_TEMPLATE_HANDLER = re.compile(r'\son(click|change)="(openNav|closeNav|openNavRight|closeNavRight|toggleFullScreen|'
                               r"toggleLightDarkTheme)\((this|'[\w-]*')?\)\"", re.IGNORECASE)
_BIND = """<script nonce="{nonce}">
document.querySelectorAll('[data-invlab-call]').forEach((el) => {{
  const call = el.dataset.invlabCall, arg = el.dataset.invlabArg;
  el['on' + el.dataset.invlabOn] = () => window[call](arg === 'this' ? el : arg);
}});
</script>"""


def _bound(match: re.Match) -> str:
    event, call, arg = match.group(1).lower(), match.group(2), (match.group(3) or "").strip("'")
    return f' data-invlab-on="{event}" data-invlab-call="{call}" data-invlab-arg="{arg}"'


def secure_page(page: str) -> tuple[str, str]:
    """`page` (a served HTML document) with a fresh nonce on each of its `<script>` tags and the template's inline
    handlers bound by script; returns (the page, the Content-Security-Policy header value for it)."""
    nonce = secrets.token_urlsafe(18)
    page = _SCRIPT_TAG.sub(f'<script nonce="{nonce}"', page)
    page = _TEMPLATE_HANDLER.sub(_bound, page)
    closing = page.rfind("</body>")
    if closing >= 0:
        page = page[:closing] + _BIND.format(nonce=nonce) + page[closing:]
    return page, POLICY.format(nonce=nonce)


def install() -> None:
    """Give every page Panel's server sends (the app's document handler) the policy above; once per process."""
    from panel.io.server import DocHandler

    if getattr(DocHandler, "_invlab_csp", False):
        return
    write = DocHandler.write

    def write_with_policy(self, chunk):
        if isinstance(chunk, (bytes, str)):
            text = chunk.decode("utf-8") if isinstance(chunk, bytes) else chunk
            if "<html" in text[:500].lower():
                text, policy = secure_page(css_reads.add_to(text))
                self.set_header("Content-Security-Policy", policy)
                chunk = text
        return write(self, chunk)

    DocHandler.write = write_with_policy
    DocHandler._invlab_csp = True
