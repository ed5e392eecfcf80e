"""Tabs drawn when first shown and kept (`KeptTabs`): the page's four pages and the sidebar's control tabs.

Panel's `Tabs(dynamic=True)` also draws a tab only when it is shown, but every later switch sends the whole list of
tabs again and walks every model of the document on the server: about 200 ms of the server thread's time, holding
Python's lock, on a training page of a 2-core machine. A Pause pressed just after a switch waited for that walk and
for the training step it slowed (p50 360-400 ms). Here a switch to a tab already drawn is only the browser's: the
server takes the new `active` and sends nothing.
"""
from __future__ import annotations

import panel as pn
from bokeh.models import Div as BkDiv
from bokeh.models import TabPanel as BkTabPanel
from panel.viewable import Layoutable

# Bokeh hides an inactive tab's content with `visibility: hidden; pointer-events: none; opacity: 0` on its root
# alone. Both properties are inherited, so a descendant whose own stylesheet sets them back (the Lessons page's
# heading did) stays invisible, through the opacity, yet takes the clicks meant for the tab shown above it. A tab
# kept drawn but not shown is taken out of the page's layout instead: its content is kept in the browser, and a
# plot in it is laid out again when it is shown (Bokeh observes its size).
HIDDEN_TAB_CSS = """
[class*="bk-panel-models-"][aria-hidden="true"] { display: none !important; }
"""


# What a tab not drawn yet shows when it is clicked: the server draws it next, which takes seconds while a run trains
# on a busy machine (a blank page meanwhile looked broken). Plain words, no symbol a browser's fonts may lack.
NOT_DRAWN = '<div style="padding: 24px 16px; font-size: 16px; opacity: 0.75">Drawing this page…</div>'


class KeptTabs(pn.Tabs):
    """`pn.Tabs` whose tab is drawn (its Bokeh models built and sent to the browser) the first time it is shown, and
    kept from then on: switching back to it costs the server nothing. A tab not yet shown is a line saying it is
    being drawn (`NOT_DRAWN`), of the tab's size; a tab drawn and not shown is kept out of the layout
    (`HIDDEN_TAB_CSS`), so nothing in it can take a click meant for the tab shown. `dynamic` is always False (the
    browser holds every tab it has shown)."""

    def __init__(self, *objects, **params):
        params["dynamic"] = False
        params["stylesheets"] = [*params.get("stylesheets", []), HIDDEN_TAB_CSS]
        super().__init__(*objects, **params)
        self._drawn: set[int] = set()  # id() of the tab objects shown once (on any page showing these tabs)
        self.param.watch(self._on_active, "active")

    def drawn(self, index: int) -> bool:
        """Whether tab `index` has been shown (and so drawn) once."""
        return 0 <= index < len(self) and id(self.objects[index]) in self._drawn

    def _on_active(self, event) -> None:
        if 0 <= event.new < len(self) and not self.drawn(event.new):
            self.param.trigger("objects")  # the new tab's models join the page; the others' are reused

    def _get_objects(self, model, old_objects, doc, root, comm=None):
        """Panel's `Tabs._get_objects`, with "hidden" meaning "never shown" rather than "not the active tab"."""
        from panel.pane.base import RerenderError, panel

        if len(self._names) != len(self):
            raise ValueError(f"Tab names do not match objects: {len(self._names)} names, {len(self)} objects")
        for i, (name, pane) in enumerate(zip(self._names, self)):
            self.objects[i] = panel(pane, name=name)
        if 0 <= self.active < len(self):
            self._drawn.add(id(self.objects[self.active]))

        ref = root.ref["id"]
        panels, rendered = self._panels[ref], self._rendered[ref]
        for obj in old_objects:
            if obj in self.objects:
                continue
            obj._cleanup(root)
            panels.pop(id(obj), None)
            rendered.pop(id(obj), None)

        new_models, old_models = [], []
        current_objects = list(self)
        for i, (name, pane) in enumerate(zip(self._names, self)):
            pref = id(pane)
            hidden = pref not in self._drawn
            tab = panels.get(pref)
            prev_hidden = hasattr(tab, "child") and tab.child.tags == ["hidden"]
            if pane in old_objects and tab is not None and hidden == prev_hidden:
                new_models.append(tab)  # unchanged: the same model, nothing sent for it
                continue
            if not hidden and pref in rendered:
                child = rendered[pref]
                old_models.append(child)
            elif hidden:
                sizes = {k: getattr(pane, k) for k in pane.param  # the tab's size, so the page keeps its layout
                         if k in Layoutable.param and k not in ("name", "design") and getattr(pane, k) is not None}
                child = BkDiv(**sizes)  # shown at once on the click, until the server's drawing arrives
                child.text, child.tags = NOT_DRAWN, ["hidden"]
            else:
                try:
                    rendered[pref] = child = pane._get_model(doc, root, model, comm)
                except RerenderError as e:
                    if e.layout is not None and e.layout is not self:
                        raise e
                    e.layout = None
                    return self._get_objects(model, current_objects[:i], doc, root, comm)
            panels[pref] = BkTabPanel(title=name, name=pane.name, child=child, closable=self.closable)
            new_models.append(panels[pref])
        return new_models, old_models
