"""The dashboard in a Jupyter notebook: `extension()` and `show(view)` (`display`), and the column an `Explorer` is
drawn in there (`view`)."""
from invlab.dashboard.notebook.display import extension, lesson_steps, show
from invlab.dashboard.notebook.view import NotebookView

__all__ = ["NotebookView", "extension", "lesson_steps", "show"]
