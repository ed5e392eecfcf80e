"""Say why a number box refuses a character.

Bokeh's number boxes drop any character that cannot be part of a number as it is typed: a student who types
"1e-2x" or "abc" sees nothing happen and nothing said. `NumberBoxGuard`, an invisible element drawn once on the
page (served or in a notebook), listens to what is about to be typed into a number box and, when it is refused,
shows the browser's own message at that box: "Numbers only: "x" cannot be part of a number." The next accepted
character clears it. Nothing reaches Python: the box keeps its last number.
"""
from __future__ import annotations

from panel.reactive import ReactiveHTML

# Characters a number box takes (Bokeh's own filter: digits, sign, point, exponent).
NUMBER_CHARACTERS = "0123456789+-.eE"

_INSTALL = """
if (window.invlabNumberGuard) return;
window.invlabNumberGuard = true;
const allowed = '%s';
document.addEventListener('beforeinput', (event) => {
  const input = event.composedPath()[0];
  if (!(input instanceof HTMLInputElement)) return;
  const host = input.getRootNode().host;
  if (host == null || !/Spinner|NumericInput|IntInput|FloatInput/.test(host.className + ' ' + host.tagName)) return;
  const typed = event.data == null ? '' : event.data;
  const refused = [...typed].filter((c) => !allowed.includes(c));
  if (refused.length) {
    input.setCustomValidity('Numbers only: "' + refused.join('') + '" cannot be part of a number.');
    input.reportValidity();
  } else if (input.validationMessage) {
    input.setCustomValidity('');
  }
}, true);
""" % NUMBER_CHARACTERS


class NumberBoxGuard(ReactiveHTML):
    """An invisible element that makes every number box of its page say, at the box, when it refuses a typed
    character (see the module's doc). One is enough for a page; more do no harm."""

    _template = '<div id="guard" style="display: none"></div>'
    _scripts = {"render": _INSTALL}
