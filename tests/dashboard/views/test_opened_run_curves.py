"""What the curves of a run opened on the page look like to its browser: a second stored run replaces the first's line
(the browser never receives its points twice), a long gap in a watched loop's steps breaks the line, a long metric
name (a GPyTorch hyperparameter's path) gets a title that wraps at word boundaries with the full name on hover, and
the curves' CSV is named after its run and says each value's unit."""
import html
import math

import numpy as np
from bokeh.core.serialization import Serializer
from bokeh.document import Document
from bokeh.document.events import ColumnDataChangedEvent, ColumnsStreamedEvent, ModelChangedEvent

from invlab.dashboard.views.curve_plot import CurvePlot
from invlab.dashboard.views.panes import CurveBoard


def _as_sent(events, source) -> dict:
    """The columns of `source` a browser holds after it receives the held `events` (each serialised as it is sent:
    when the hold ends), starting from what it held before."""
    held = {k: list(v) for k, v in source.data.items()}
    serializer = Serializer()
    out = None
    for event in events:
        if getattr(event, "model", None) is not source and getattr(event, "column_source", None) is not source:
            continue
        if isinstance(event, ModelChangedEvent) and event.attr == "data":
            new = serializer.encode(event.new)
            out = {k: list(np.asarray(_decoded(v))) for k, v in new.items()}
        elif isinstance(event, ColumnDataChangedEvent):
            out = {k: list(v) for k, v in source.data.items()}
        elif isinstance(event, ColumnsStreamedEvent):
            out = out if out is not None else held
            for k, v in event.data.items():
                out[k] = list(out[k]) + list(np.asarray(v))
    return out if out is not None else held


def _decoded(value):
    if isinstance(value, dict) and value.get("type") == "ndarray":  # a buffer reference, or base64 text
        array = value["array"]
        if isinstance(array, dict) and "data" in array and isinstance(array["data"], str):
            import base64

            raw = base64.b64decode(array["data"])
        else:
            raw = array.data if hasattr(array, "data") else array.to_bytes()
        return np.frombuffer(bytes(raw), dtype=value["dtype"])
    return value


def test_a_second_run_drawn_in_one_held_message_replaces_the_first_run_s_points_once():
    """Opening a second stored run clears the line and sends the new run's whole history in the same tick: the browser
    must hold that history once, in step order (not the new points twice: a line from the last point back to the
    first)."""
    plot = CurvePlot("elbo", length=20_000)
    doc = Document()
    doc.add_root(plot.figure)
    plot.extend(np.arange(1, 31), np.linspace(-50, -20, 30))  # the first run, already on the page
    doc.hold("combine")
    plot.clear()  # the second run is opened: archived, cleared ...
    plot.extend(np.arange(1, 21), np.linspace(-40, -10, 20))  # ... and its history sent, all in one tick
    received = _as_sent(list(doc.callbacks._held_events), plot.source)
    doc.unhold()
    assert received["step"] == list(range(1, 21)), received["step"]


def test_a_long_gap_in_a_watched_loops_steps_breaks_the_line_instead_of_joining_it():
    plot = CurvePlot("loss", length=20_000)
    steps = [*range(1, 51), *range(400, 451)]  # logged every step, then nothing for 350 steps
    plot.extend(steps[:30], np.linspace(5, 3, 30))
    plot.extend(steps[30:], np.linspace(3, 1, len(steps) - 30))
    data = plot.source.data
    drawn = np.asarray(data["smoothed"], dtype=float)
    xs = np.asarray(data["step"])
    assert list(xs) == sorted(xs)  # in step order
    gap = [i for i in range(len(xs)) if 50 < xs[i] < 400]
    assert len(gap) == 1 and math.isnan(drawn[gap[0]]) and math.isnan(data["loss"][gap[0]])  # one break: NaN
    assert np.isfinite(drawn[[i for i in range(len(xs)) if i not in gap]]).all()
    evaluation = CurvePlot("test_error", length=20_000)  # a sparse metric evenly spaced is not broken
    evaluation.extend(np.arange(100, 2100, 100), np.linspace(0.5, 0.1, 20))
    assert np.isfinite(np.asarray(evaluation.source.data["test_error"], dtype=float)).all()


def test_a_long_metric_name_gets_a_title_wrapped_between_words_and_its_full_name_on_hover():
    name = "hyperparameters/covar_module.base_kernel.base_kernel.lengthscale"
    plot = CurvePlot(name, length=100)
    lines = plot.figure.title.text.split("\n")
    assert len(lines) <= 2 and all(len(line) <= 48 for line in lines), lines
    words = set(name.replace("/", " ").replace(".", " ").replace("_", " ").split())
    for line in lines:  # never cut inside a word: every word of the title is a word of the name (or "…")
        for word in line.replace("(", " ").replace(")", " ").replace("/", " ").replace(".", " ").replace(
                "_", " ").replace(":", " ").split():
            assert word.lower() in {w.lower() for w in words} | {"…"}, (word, lines)
    assert "lengthscale" in lines[0].lower()  # the quantity first
    hover = [t for t in plot.figure.tools if type(t).__name__ == "HoverTool"][0]
    assert any(name in str(row) for row in hover.tooltips), hover.tooltips  # the full name on hover
    assert len(plot.figure.yaxis[0].axis_label) <= 30, plot.figure.yaxis[0].axis_label  # fits the plot's height


def test_the_curves_csv_is_named_after_its_run_and_gives_each_values_unit():
    board = CurveBoard()
    board.run_name = "run 3"
    board.send("elbo", [1, 2], [-3.0, -2.0])
    board.archive("lr 0.1")
    board.run_name = "run 7 my-loop"
    board.send("elbo", [1], [-5.0])
    board.send("test_error", [1], [0.25])
    text = board.to_csv().getvalue()
    lines = text.splitlines()
    assert lines[0] == "run,label,metric,unit,step,value"
    assert "run 3,lr 0.1,elbo,nats,2,-2.0" in lines
    assert "run 7 my-loop,this run,elbo,nats,1,-5.0" in lines
    assert "run 7 my-loop,this run,test_error,%,1,25.0" in lines  # in the page's units, as drawn
    assert "current" not in text
    assert board.csv_filename() == "invlab_curves_run-7-my-loop.csv"


def test_a_long_metric_names_hover_shows_its_markup_as_text():
    """Bokeh parses a tooltip's template as HTML and fills @column and $special placeholders in it: a stored run's
    metric name shown on hover is given as text (escaped, its @ and $ as character references), so
    `<img onerror=…>` in a watched loop's metric name is drawn as those characters and runs nothing."""
    name = "hyperparameters/<img src=x onerror=alert(1)>.base_kernel.lengthscale @step $index and more words"
    plot = CurvePlot(name, length=100)
    hover = [t for t in plot.figure.tools if type(t).__name__ == "HoverTool"][0]
    shown = dict(hover.tooltips)["metric"]
    assert "<" not in shown and ">" not in shown and "@" not in shown and "$" not in shown, shown
    assert html.unescape(shown) == name  # the whole name, as characters
