"""The served app keeps what its process loaded at start-up out of the garbage collector's full collections.

Panel runs a full collection (`gc.collect()`) a few seconds after each closed page's session ends. In the server that
walked every object the process holds, some half a million (torch, sympy, Bokeh, Panel: about a quarter of a second
of the one thread every open page's clicks wait on, per closed tab, and about a quarter of the server's CPU for a page
opened and closed). The served app freezes its start-up objects (`gc.freeze()`) once, before it builds its first
page, so that a collection walks only what the pages made since, and a closed page's objects are still collected.

Checked in a fresh process that runs `dashboard/app.py` as a server's warm-up does (the page built once)."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import gc, json, runpy, sys, weakref
runpy.run_path(sys.argv[1])  # the served app, as Panel's warm-up runs it: its start-up, then one page
frozen, walked = gc.get_freeze_count(), len(gc.get_objects())
from invlab.dashboard import Explorer
page = Explorer(store=None)
page.__panel__()
gone = weakref.ref(page)
page.close()
del page
gc.collect()
print(json.dumps({"frozen": frozen, "walked": walked, "page_collected": gone() is None}))
"""


def test_the_served_apps_start_up_objects_are_frozen_and_a_closed_page_is_still_collected(tmp_path):
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT / "dashboard" / "app.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "INVLAB_DATA": str(tmp_path / "data")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    # torch, sympy, Bokeh and Panel alone are a few hundred thousand objects; what a collection still walks is the
    # page built after the freeze, a small part of that
    assert seen["frozen"] > 200_000, seen
    assert seen["walked"] < seen["frozen"] / 4, seen
    assert seen["page_collected"], seen
