"""The Compare page's Discover study shows the verdict's second opinion from held-out data beside the verdict, and
the judged learned ranges in the ranking, as text: a candidate's name or a note that looks like markup is never read as
HTML or Markdown. Built from a constructed report (no training)."""
import param

from invlab.dashboard.compare.discover_table import DiscoverTable
from invlab.sweeps.discover_ranges import judge
from invlab.sweeps.discover_report import CandidateResult, DiscoverReport, mean_sd
from invlab.sweeps.discover_second import SecondOpinion
from tests.helpers.panes import pane_text

BUDGET = {"steps": 10, "optimizer": "adam", "learning_rate": 0.02, "batch_size": 0, "num_inducing": 5,
          "num_samples": 4, "seeds": [0, 1]}


class Shown(param.Parameterized):
    sweep_id = param.Integer(default=7, allow_None=True)
    state = param.String(default="finished")
    message = param.String(default="")


def result(name, elbos, learned=None):
    c = CandidateResult(name, elbos=dict(enumerate(elbos)), finished=len(elbos), input_shape=(1, 28, 28))
    c.elbo_mean, c.elbo_sd = mean_sd(elbos)
    c.learned = {k: {"mean": v, "sd": None, "steps": [], "values": []} for k, v in (learned or {}).items()}
    c.judgements = judge(c)
    return c


def test_the_study_shows_the_second_opinion_and_the_judged_ranges_as_text():
    none = result("none", [-150.0, -151.0])
    affine = result("affine", [-100.0, -101.0], {"rotation.lo": -40.0, "rotation.hi": 41.0, "shear.lo": 0.2,
                                                 "shear.hi": 0.3, "scale_x.lo": -0.001, "scale_x.hi": 0.001})
    second = SecondOpinion(False, "the held-out test NLPD disagrees: <b>*bold*</b> _under_ <script>x</script>")
    report = DiscoverReport(7, "digits", "finished", [affine, none], BUDGET, ["a note"], "invariant under affine",
                            False, 4, 4, second=second)
    table = DiscoverTable(Shown(), context=None, say_error=lambda text: None)
    table.report = report
    table.draw(running=False)
    shown = pane_text(table.verdict)
    assert "Second opinion: the held-out test NLPD disagrees: <b>*bold*</b> _under_ <script>x</script>" in shown
    assert "<script>" not in table.verdict.object  # escaped, never markup
    cell = table.table.value.loc[0, "learned range (final)"]
    assert cell.startswith("rotation [-40.0, 41.0], shear [0.200, 0.300] (a warp)"), cell
