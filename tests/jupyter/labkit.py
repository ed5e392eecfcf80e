"""Helpers for the JupyterLab tests: a private `jupyter lab` on 127.0.0.1, a Chromium page that may not reach
anything but this machine, and the few JupyterLab gestures the tests need (open, run all, read outputs).

The server runs with its own config, data, runtime and settings directories, so nothing of the user's Jupyter
set-up leaks in; its only kernel is this Python with the checkout on PYTHONPATH (a kernelspec named python3,
as the notebooks ask for).
"""
from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import shutil
import sys
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from invlab.dashboard.serving.process import ROOT, chromium_path, free_port, running_server
from tests.browser.pagekit import poll  # noqa: F401 — the tests import it from here
from tests.helpers.chromium import browser_context

HAVE_CHROMIUM = chromium_path() is not None
try:
    import jupyterlab  # noqa: F401

    HAVE_JUPYTERLAB = True
except ImportError:
    HAVE_JUPYTERLAB = False

NOTEBOOKS = ROOT / "notebooks"


# -- the server ----------------------------------------------------------------------------------------------------
def write_kernelspec(data_dir: Path, env: dict) -> None:
    """A python3 kernelspec for this interpreter, with `env` (PYTHONPATH of the checkout, …)."""
    spec = data_dir / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (Invariance Lab)", "language": "python", "env": env,
        "metadata": {"debugger": False}}))


@contextlib.contextmanager
def jupyter_lab(directory: Path, *, kernel_env: dict | None = None, timeout: float = 120.0, app: str = "lab"):
    """`jupyter lab` (or `jupyter notebook` with app="notebook") serving `directory/root` on a free
    127.0.0.1 port, no token; yields (base URL, the directory's layout as a dict). Stops it afterwards."""
    directory = Path(directory)
    dirs = {name: directory / name for name in ("root", "config", "data", "runtime", "settings", "workspaces",
                                                 "ipython", "invlab")}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    # No announcement / news pop-ups (they would also try to fetch the news feed).
    (dirs["config"] / "labconfig").mkdir(exist_ok=True)
    (dirs["config"] / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(dirs["config"]), JUPYTER_DATA_DIR=str(dirs["data"]),
               JUPYTER_RUNTIME_DIR=str(dirs["runtime"]), JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
               JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]), IPYTHONDIR=str(dirs["ipython"]),
               JUPYTER_PLATFORM_DIRS="1", JUPYTER_PREFER_ENV_PATH="0", PYTHONPATH=str(ROOT))
    env.pop("JUPYTER_PATH", None)
    write_kernelspec(dirs["data"], {"PYTHONPATH": str(ROOT), "INVLAB_DATA": str(dirs["invlab"]),
                                    "INVLAB_TORCH_THREADS": "1", "INVLAB_QUICK": "1", "OMP_NUM_THREADS": "1",
                                    "INVLAB_HEARTBEAT_S": "0.5",
                                    **(kernel_env or {})})
    port = free_port()
    args = [sys.executable, "-m", "jupyter", app, "--no-browser", f"--ServerApp.port={port}",
            "--ServerApp.ip=127.0.0.1", "--ServerApp.open_browser=False", "--IdentityProvider.token=",
            "--ServerApp.password=", f"--ServerApp.root_dir={dirs['root']}", "--ServerApp.port_retries=0",
            "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly", "--LabApp.expose_app_in_browser=True", "--ServerApp.allow_root=True",
            "--MappingKernelManager.cull_idle_timeout=0",
            "--ServerApp.disable_check_xsrf=True"]  # the tests shut kernels down through the REST API
    if app == "notebook":  # Notebook 7: JupyterLab's front end under its own application class
        args = [a for a in args if not a.startswith("--LabApp.")] + ["--JupyterNotebookApp.expose_app_in_browser=True"]
    log_path = directory / "jupyter.log"
    url = f"http://127.0.0.1:{port}"
    with running_server(args, cwd=dirs["root"], env=env, log_path=log_path, probe_url=f"{url}/api/status",
                        what="jupyter", timeout=timeout):
        yield url, dirs


def copy_notebooks(root: Path, names=None) -> list[str]:
    """Copy the teaching notebooks (or `names` of them) into the server's root; their names."""
    names = names or sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    for name in names:
        shutil.copy(NOTEBOOKS / name, root / name)
    return names


def write_notebook(path: Path, cells: list[str]) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def kernel_client(url: str, dirs: dict, path: str):
    """A client on the kernel of notebook `path`, through its connection file in the private runtime dir."""
    from jupyter_client import BlockingKernelClient

    sessions = json.load(urllib.request.urlopen(f"{url}/api/sessions", timeout=10))
    kernel_id = next(s["kernel"]["id"] for s in sessions if s["path"] == path)
    client = BlockingKernelClient()
    client.load_connection_file(str(dirs["runtime"] / f"kernel-{kernel_id}.json"))
    client.start_channels()
    client.wait_for_ready(timeout=30)
    return client


def kernel_eval(client, expression: str, timeout: float = 30.0):
    """The value of `expression` in the kernel (as a Python literal through repr)."""
    import ast

    reply = client.execute_interactive("", user_expressions={"v": expression}, timeout=timeout)
    value = reply["content"]["user_expressions"]["v"]
    assert value["status"] == "ok", value
    return ast.literal_eval(value["data"]["text/plain"])


# -- the browser ---------------------------------------------------------------------------------------------------
def is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname
    if host is None:  # data:, blob:, about: — nothing leaves the page
        return True
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# The requests `lab_page` hands to its Python handler: any but data:, blob:, about: and those to this machine by name
# or loopback address. Playwright matches a pattern in its driver, so the page's own requests go on without waiting
# for this process: a handler runs only while a call of the synchronous API waits on the browser (not while a test
# sleeps between polls), and JupyterLab loaded in 7 s instead of 3 when each of its requests waited for the next poll.
NOT_THIS_MACHINE = re.compile(r"^(?!(?:data|blob|about):)(?!(?:https?|wss?)://(?:localhost|127(?:\.\d{1,3}){3}"
                              r"|\[::1\])(?::\d+)?(?:[/?#]|$))")


@contextlib.contextmanager
def lab_page(width: int = 1500, height: int = 1000):
    """A Chromium page on which every request to a host other than this machine is refused and recorded.

    Yields (page, outside, errors): the URLs of refused requests and the page's JavaScript errors."""
    outside: list[str] = []
    errors: list[str] = []

    def route(route):
        if route.request.url.split(":", 1)[0] in ("data", "blob", "about") or is_loopback(route.request.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort("internetdisconnected")

    with browser_context(viewport={"width": width, "height": height}) as context:
        context.route(NOT_THIS_MACHINE, route)
        page = context.new_page()
        page.on("pageerror", lambda err: errors.append(str(err)))
        yield page, outside, errors


# JupyterLab's state, read through the application object (`expose_app_in_browser`): the notebook open at `path`,
# whether its cells are shown, and its kernel's status as the toolbar shows it.
_NOTEBOOK_STATE = """(path) => {
  const app = window.jupyterapp;
  const panel = app && app.shell.currentWidget;
  if (!panel || !panel.context || panel.context.path !== path || !panel.content) return null;
  const ctx = panel.sessionContext;
  return {cells: panel.content.widgets.length, shown: !!panel.node.querySelector('.jp-Cell'),
          kernel: !!(ctx.session && ctx.session.kernel), status: ctx.kernelDisplayStatus};
}"""


def open_notebook(page, url: str, name: str, timeout: float = 240.0, app: str = "lab") -> None:
    """Open `name` in JupyterLab, in a workspace of its own (or in Notebook 7's one-notebook page, app="notebook"),
    and wait until it is the current tab, its cells are shown and its kernel has started and is idle.

    A new workspace per page: JupyterLab otherwise restores the tabs of the last page that used the server (the
    notebooks of earlier tests, each starting a kernel again and running its outputs' JavaScript)."""
    address = f"/notebooks/{name}" if app == "notebook" else f"/lab/workspaces/t{uuid.uuid4().hex[:12]}/tree/{name}"
    page.goto(url + address, wait_until="domcontentloaded")

    def ready():
        state = page.evaluate(_NOTEBOOK_STATE, name)
        return state if state and state["cells"] and state["shown"] and state["kernel"] \
            and state["status"] == "idle" else None

    poll(ready, timeout=timeout, interval=0.5)


def wait_kernel_idle(page, timeout: float = 120.0) -> None:
    """The open notebook's kernel has started and is idle (JupyterLab's kernel status says so)."""
    poll(lambda: kernel_idle(page), timeout=timeout, interval=0.25)


def command(page, name: str, args: dict | None = None) -> None:
    """Run a JupyterLab command (without waiting for what it starts)."""
    page.evaluate("([name, args]) => { window.jupyterapp.commands.execute(name, args || {}); }", [name, args])


def run_command(page, name: str, args: dict | None = None, timeout: float = 120.0):
    """Run a JupyterLab command and wait until the promise it returns settles; its value (the run commands'
    value says whether every cell ran without an error). Then wait for the kernel to be idle."""
    key = uuid.uuid4().hex
    page.evaluate("""([key, name, args]) => {
      window.__invlab = window.__invlab || {};
      window.jupyterapp.commands.execute(name, args || {}).then(
        (value) => { window.__invlab[key] = {value: value === undefined ? null : value}; },
        (err) => { window.__invlab[key] = {error: String(err)}; });
    }""", [key, name, args])
    result = poll(lambda: page.evaluate("(key) => (window.__invlab || {})[key] || null", key), timeout=timeout,
                  interval=0.25)
    assert "error" not in result, f"{name}: {result['error']}"
    wait_kernel_idle(page, timeout)
    return result["value"]


def run_all(page, timeout: float = 240.0) -> bool:
    """Run every cell (Run ▸ Run All Cells) and wait until all have run, or one has failed (JupyterLab then
    stops running the rest): whether all ran without an error."""
    return bool(run_command(page, "notebook:run-all-cells", timeout=timeout))


def kernel_idle(page) -> bool:
    return page.evaluate("""() => {
      const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
      const ctx = panel && panel.sessionContext;
      return !!(ctx && ctx.session && ctx.session.kernel && ctx.kernelDisplayStatus === 'idle');
    }""")


def cells_done(page) -> bool:
    """Every code cell has an execution count and the kernel is idle."""
    return page.evaluate("""() => {
      const panel = window.jupyterapp.shell.currentWidget;
      const cells = panel.content.model.cells;
      for (let i = 0; i < cells.length; i++) {
        const c = cells.get(i);
        if (c.type === 'code' && !c.executionCount) return false;
      }
      return panel.sessionContext.kernelDisplayStatus === 'idle';
    }""")


def run_cell(page, index: int, timeout: float = 60.0) -> bool:
    """Run the open notebook's cell `index` (0-based) and wait until it has run and the kernel is idle again:
    whether it ran without an error."""
    page.evaluate("(i) => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = i; }", index)
    return bool(run_command(page, "notebook:run-cell", timeout=timeout))


def shut_down_kernels(url: str) -> None:
    """End every session of the server and its kernel (what Kernel ▸ Shut Down All does), and wait for it."""
    sessions = json.load(urllib.request.urlopen(f"{url}/api/sessions", timeout=30))
    for session in sessions:
        request = urllib.request.Request(f"{url}/api/sessions/{session['id']}", method="DELETE")
        urllib.request.urlopen(request, timeout=60).close()


def error_outputs(page) -> list[str]:
    """Every output of the open notebook that reports an error: an exception, stderr text naming an error, an
    HTML traceback (Panel shows errors raised in its callbacks that way), or a cell whose result is only the bare
    repr of a Python object (`<function render_image_grid ...>`: a figure that was meant to be drawn and was not)."""
    return page.evaluate(r"""() => {
      const out = [];
      const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
      for (let i = 0; i < cells.length; i++) {
        const json = cells.get(i).toJSON();
        for (const o of json.outputs || []) {
          if (o.output_type === 'error') out.push(`cell ${i}: ${o.ename}: ${o.evalue}`);
          const text = [].concat(o.text || []).join('');
          if (o.output_type === 'stream' && o.name === 'stderr' && /Traceback|Error\b|Exception/.test(text))
            out.push(`cell ${i} (stderr): ${text.slice(0, 1500)}`);
          const html = o.data ? [].concat(o.data['text/html'] || []).join('') : '';
          if (/Traceback \(most recent call last\)/.test(html)) out.push(`cell ${i} (html): ${html.slice(-1500)}`);
          const keys = o.data ? Object.keys(o.data) : [];
          const plain = o.data ? [].concat(o.data['text/plain'] || []).join('') : '';
          if (o.output_type === 'execute_result' && keys.length === 1
              && /^<(function |bound method |built-in function |[\w.]+ object at 0x)/.test(plain))
            out.push(`cell ${i}: the result is a bare Python object, nothing drawn: ${plain.slice(0, 200)}`);
        }
      }
      return out;
    }""")


def stderr_outputs(page) -> list[str]:
    """Every text the open notebook's cells wrote to stderr (a warning a reader would see under a cell)."""
    return page.evaluate(r"""() => {
      const out = [];
      const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
      for (let i = 0; i < cells.length; i++)
        for (const o of cells.get(i).toJSON().outputs || [])
          if (o.output_type === 'stream' && o.name === 'stderr')
            out.push(`cell ${i}: ${[].concat(o.text || []).join('').slice(0, 500)}`);
      return out;
    }""")


def output_texts(page, index: int) -> str:
    """The plain text of cell `index`'s outputs (stream text and text/plain results)."""
    return page.evaluate(r"""(i) => {
      const json = window.jupyterapp.shell.currentWidget.content.model.cells.get(i).toJSON();
      return (json.outputs || [])
        .map(o => [].concat(o.text || (o.data && o.data['text/plain']) || []).join('')).join('\n');
    }""", index)


# The number of points in the page's data source holding column `name` (the largest such source).
def column_length(page, name: str) -> int:
    return page.evaluate("""(name) => {
      let n = 0;
      for (const doc of (window.Bokeh ? Bokeh.documents : []))
        for (const m of doc._all_models.values())
          if (m.data && m.data[name]) n = Math.max(n, m.data[name].length);
      return n;
    }""", name)


def plots_and_canvases(page) -> tuple[int, int, int, int]:
    """(Bokeh plots in the page's documents, plot canvases in the page, canvases in view, those drawn).

    Every plot view puts a canvas into the shadow DOM Bokeh renders into; one in a hidden tab has no size."""
    return tuple(page.evaluate("""() => {
      let plots = 0;
      for (const doc of (window.Bokeh ? Bokeh.documents : []))
        for (const m of doc._all_models.values())
          if ('x_range' in m && 'renderers' in m && 'toolbar' in m) plots++;
      let canvases = 0, shown = 0, drawn = 0;
      const walk = (root) => {
        for (const el of root.querySelectorAll('*')) {
          if (el.classList && el.classList.contains('bk-Canvas')) {
            canvases++;
            if (el.getBoundingClientRect().width > 0) {
              shown++;
              const c = (el.shadowRoot && el.shadowRoot.querySelector('canvas')) || el.querySelector('canvas');
              if (c && c.width > 0 && c.height > 0) drawn++;
            }
          }
          if (el.shadowRoot) walk(el.shadowRoot);
        }
      };
      walk(document);
      return [plots, canvases, shown, drawn];
    }"""))


def widget_value(page, title: str):
    """The value of the page's input widget labelled `title` (the first one, as Bokeh holds it)."""
    return page.evaluate("""(title) => {
      for (const doc of Bokeh.documents)
        for (const m of doc._all_models.values())
          if (m.title === title && 'value' in m) return m.value;
      return null;
    }""", title)


def set_widget_value(page, title: str, value) -> None:
    """Set the input widget labelled `title` as a user typing a value into it would."""
    page.evaluate("""([title, value]) => {
      for (const doc of Bokeh.documents)
        for (const m of doc._all_models.values())
          if (m.title === title && 'value' in m) { m.value = value; return; }
      throw new Error('no widget ' + title);
    }""", [title, value])


def scroll_to_first_plot(page) -> None:
    """Scroll the open notebook so that the first output holding a Bokeh plot is at the top (for screenshots)."""
    page.evaluate("""() => {
      for (const out of document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output')) {
        if (out.querySelector('[data-root-id]')) { out.scrollIntoView({block: 'start'}); return; }
      }
    }""")
    time.sleep(0.5)


def screenshot_plot_outputs(page, path_for) -> list[str]:
    """A screenshot of the open notebook scrolled to each cell whose output holds a plot (HoloViews or Panel), to
    look at what a reader sees; `path_for(i)` names the i-th file. The paths written.

    JupyterLab does not lay out cells far outside the view, so each is scrolled to through the notebook first."""
    cells = page.evaluate("""() => {
      const cells = window.jupyterapp.shell.currentWidget.content.model.cells, found = [];
      for (let i = 0; i < cells.length; i++)
        for (const o of cells.get(i).toJSON().outputs || [])
          if (o.data && o.data['application/vnd.holoviews_exec.v0+json'] !== undefined) { found.push(i); break; }
      return found;
    }""")
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer")
    paths = []
    for i in cells:
        page.evaluate("(i) => window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'start')", i)
        time.sleep(1.0)
        paths.append(path_for(len(paths)))
        panel.screenshot(path=paths[-1])
    return paths


# Points held by the page's Bokeh plot `model_id` (the largest of its glyphs' data sources): None when the page has
# no such model (it was never sent, or a later message referred to it before it arrived).
PLOT_POINTS_JS = """(ids) => {
  const out = {};
  for (const id of ids) {
    out[id] = null;
    for (const doc of (window.Bokeh ? Bokeh.documents : [])) {
      const m = doc.get_model_by_id(id);
      if (!m) continue;
      let n = 0;
      for (const r of (m.renderers || [])) {
        const data = r.data_source && r.data_source.data;
        if (!data) continue;
        for (const col of Object.values(data)) n = Math.max(n, col.length || 0);
      }
      out[id] = n;
    }
  }
  return out;
}"""


def plot_points(page, model_ids: list[str]) -> dict[str, int | None]:
    """{Bokeh model id: the points its plot holds in the page (None: the page does not have it)}."""
    return page.evaluate(PLOT_POINTS_JS, model_ids)


# In the kernel: {Bokeh model id of a plot of the run's layout shown in the notebook: what it shows}.
LAYOUT_PLOTS = """{m.id: name for name, pane in list(explorer.curves.plots.items())
   + [(k, v.body) for k, v in explorer.view_panes.items() if v.dmap is not None]
 for (m, _) in list(pane._models.values())}"""
