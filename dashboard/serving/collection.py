"""The server's start-up objects kept out of the garbage collector's full collections.

Panel runs a full collection (`gc.collect()`) a few seconds after each closed page's session ends. A full collection
walks every object the process holds; in the server that is torch, sympy (loaded by the first optimiser), Bokeh and
Panel: about half a million objects and a quarter of a second or more of the server's one thread, the thread every
open page's clicks wait on, once per closed tab. None of those objects ever becomes garbage: they are the modules and
what they built as they loaded. `gc.freeze()` moves them to a permanent generation that collections skip, so a
collection walks only what the pages made since, and a closed page's objects are still collected.
"""
from __future__ import annotations

import gc

_frozen: list[bool] = []  # one entry once this process has frozen (`gc.get_freeze_count` walks the whole list)


def freeze_start_up_objects() -> bool:
    """Collect once, then freeze every object the process holds now (`gc.freeze`), the first time it is called in
    a process; True if it froze. The served app calls it after its start-up work and before it builds its first
    page, so that no page's objects are frozen (they stay collectable when the page closes)."""
    if _frozen:
        return False
    gc.collect()
    gc.freeze()
    _frozen.append(True)
    return True
