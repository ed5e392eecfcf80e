"""A served page's text panes given their final stylesheets once, as the page connects, not at their first change.

Panel draws a text pane (Markdown, HTML, an Alert) inside the page's template with the template's stylesheets but
without its theme's base stylesheet; the pane's first change of text then sends its whole stylesheet list again,
now with the theme's base stylesheet in it. That new list makes Bokeh walk every model of the document (about
0.25 s on the Training page) and the browser restyle the pane: a page's first notice ("rotation half-width set to
180") took 450–880 ms to show, every later one about 90 ms. `settle_styles` gives every text pane the list its
first change would give it, in one document change, when the page connects or a group of controls is rebuilt.
"""
from __future__ import annotations


def _key(sheet) -> str:
    """A stylesheet as Panel compares them: an imported one by its URL, an inline one by its text."""
    return str(getattr(sheet, "url", None) or getattr(sheet, "css", None) or sheet)


def settle_styles(viewable, doc) -> int:
    """Give every text pane under `viewable` (a Panel layout) drawn in `doc` (a Bokeh document) the stylesheets its
    first text change would send, all in one change of the document; returns how many panes changed. Nothing to do
    outside a served page (`doc` None), before the page is drawn (`viewable` None) or for panes already settled."""
    if doc is None or viewable is None:
        return 0
    from panel.pane.markup import HTMLBasePane

    changed = 0
    with doc.models.freeze():  # one walk of the document's models for all of them, not one per pane
        for pane in viewable.select(HTMLBasePane):
            for model, _ in list(pane._models.values()):
                if model.document is not doc:
                    continue
                sheets = pane._get_properties(doc).get("stylesheets")
                if sheets is not None and [_key(s) for s in sheets] != [_key(s) for s in model.stylesheets]:
                    model.update(stylesheets=sheets)
                    changed += 1
    return changed
