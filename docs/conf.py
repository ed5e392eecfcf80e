"""Sphinx configuration of the Invariance Lab documentation (`make docs`; `make docs-fast` skips running the
notebooks). Pages are Markdown (MyST); the CLI reference, the API reference and the notebook gallery are generated
from the code when the site is built (`_ext/invlab_docs.py`)."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))
os.environ.setdefault("COLUMNS", "100")  # argparse's usage lines wrap at the same width on every machine

project = "Invariance Lab"
author = "Invariance Lab contributors"
copyright = "Invariance Lab contributors"

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax", "sphinx-mathjax-offline", "myst_nb",
              "invlab_docs"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "_ext", "**/.ipynb_checkpoints", ".jupyter_cache"]
root_doc = "index"

# the notebooks' $…$ formulas are typeset by a MathJax copied into the site (sphinx-mathjax-offline), so the pages
# load no script from another host; a "$" must touch its formula on both sides, so "$INVLAB_DATA" stays text
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath", "amsmath"]
myst_dmath_allow_space = False
myst_dmath_allow_digits = False
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
autodoc_inherit_docstrings = False  # a method says what it does itself; torch's own docstrings are not ours
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# fast mode (the test, `make docs-fast`): the notebooks are shown as stored; otherwise they run, each once per change
FAST = os.environ.get("INVLAB_DOCS_FAST") == "1"
nb_execution_mode = "off" if FAST else "cache"
nb_execution_cache_path = str(ROOT / "docs" / "_build" / ".jupyter_cache")
nb_execution_timeout = 900
nb_execution_raise_on_error = True
nb_merge_streams = True
# HoloViews' own messages to a live Jupyter kernel (load / exec): a static page has no kernel and shows each
# plot from its HTML output, so they are skipped on purpose
suppress_warnings = ["mystnb.unknown_mime_type"]
nb_ipywidgets_js = {}  # no require.js or widget manager from a CDN: the notebooks' outputs carry their own (inline)

html_theme = "furo"
html_title = "Invariance Lab"
html_static_path = []
html_show_sourcelink = False
