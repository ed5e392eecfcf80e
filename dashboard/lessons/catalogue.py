"""Lessons: presets a lecturer opens as a link, each with two or three sentences on what to press and what to watch.

A `Lesson` is data: a preset of URL-style settings (`model`, `data.<param>`, `model.<param>`, `train.<param>`; the prior
lesson uses `page=prior` and `prior.<param>`), the view whose data shows its effect, the controls a teacher keeps
visible (`teacher=1` hides the rest), for lessons that compare two runs the settings of the second run, and its
`Step`s: the control to touch, the expected effect, the view to watch and how the page shows the effect. The card,
the banner on each page the lesson touches, teacher mode and the tests all read these steps. Sizes
are chosen so that each lesson shows its effect within a minute on a 2-core CPU with one torch thread
(`python -m benchmarks.dashboard.lessons` measures it; Discover's study takes longer and its card says how long). The
landing view, one card per lesson, is `invlab.dashboard.lessons.cards`.
"""
from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field

from invlab.dashboard.safe_text import markdown_text

# Keys of a lesson's settings that are not run configuration: which page opens, and the prior explorer's sliders.
PAGE_KEY = "page"
PRIOR_PREFIX = "prior."
CONFIG_PREFIXES = ("data.", "model.", "train.")


@dataclass(frozen=True)
class Step:
    """One thing a lesson asks for, as data: the card, the page's lesson banner, teacher mode and the tests read it.

    `control` is what to touch: "start" / "reset" (the Training page's buttons), "discover" (the Compare page's
    ▶ Discover), "open" (the Discover ranking's row of candidate `value`), "model" (the family selector) or a setting
    ("model.nu", "prior.delta"), found on the tab `tab` under the label `label`, and set to `value`. `effect` says
    what happens and `watch` names the view that shows it (a curve metric or a view name). `check` says how the page
    shows that the effect happened: ("points", metric) a curve gets points, ("view", name) a view is drawn,
    ("previous", label) a previous run's dashed curve labelled `label`, ("below", metric, x) the curve's last value
    (as plotted) falls below x, ("text", words) the page says `words`, ("verdict", words) the Discover study's
    verdict, once every candidate has finished, says `words`."""

    says: str  # what the card tells the user to do, e.g. "Press ▶ Start"
    effect: str  # what happens, e.g. "a plain GP trains and its ELBO climbs"
    control: str  # "start", "reset", "discover", "open", "model", or a setting "model.nu" / "prior.delta"
    watch: str = ""  # the curve metric or view name to look at
    value: object = None  # the value to choose or set
    tab: str = ""  # the page's tab holding the control ("Model", "Invariance"; "" for the buttons)
    label: str = ""  # the control's label on the page
    check: tuple = ()  # how the page shows the effect (see the class doc); default: `watch` gets data

    @property
    def words(self) -> str:
        """The step as the card and the banner word it: "Press ▶ Start: a plain GP trains and its ELBO climbs."."""
        return f"{self.says}: {self.effect}."

    @property
    def expect(self) -> tuple:
        """The check, with the default filled in: a curve metric gets points, a view name gets drawn."""
        if self.check:
            return self.check
        return ("view", self.watch) if self.watch in VIEW_NAMES else ("points", self.watch)


# key views that are views (plots, tables) rather than curves of the training history
VIEW_NAMES = ("patch_weights", "decision_function", "inverse_wishart_eigenvalues", "augmentation_samples")
# controls that are buttons or clicks rather than settings: teacher mode has nothing of theirs to keep visible
BUTTONS = ("start", "reset", "discover", "open")
# the Compare page's Discover study: its ranking is a lesson's key view there
DISCOVER_VIEW = "discover_ranking"


@dataclass(frozen=True)
class Lesson:
    """A preset plus its steps. `text`: one or two sentences on what the lesson shows; `steps`: what to do, in
    order, each with its expected effect (see `Step`)."""

    key: str            # used in links: ?lesson=<key>
    title: str
    text: str           # 1–2 sentences: what the lesson shows
    settings: dict      # URL-style keys → values: {"model": "invariant", "data.rotate": 90, ...}
    key_view: str       # curve metric (a `trainer.history` key) or view name that must get data
    controls: tuple = ()  # controls left visible in teacher mode besides the steps' own: "data.x" / "model.x" / ...
    compare: dict = field(default_factory=dict)  # settings of the second run, for lessons that compare two runs
    compare_view: str = ""  # what the second run adds to watch (a metric or view name), when it differs from key_view
    steps: tuple = ()  # the `Step`s, in order
    takes: str = ""  # how long its slowest step takes, where that is over a minute (the card and README say it)

    @property
    def page(self) -> str:
        """Which page the lesson opens on: "training", "prior" or "compare"."""
        return self.settings.get(PAGE_KEY, "training")

    def compare_settings(self) -> dict:
        """The full settings of the second run: the preset with `compare` applied (a new family drops the old
        family's model settings)."""
        if not self.compare:
            return {}
        base = dict(self.settings)
        if self.compare.get("model", base.get("model")) != base.get("model"):
            base = {k: v for k, v in base.items() if not k.startswith("model.")}
        base.update(self.compare)
        return base


START = "Press ▶ Start"
# Discover's 16 runs (2 seeds, 300 steps, 2 Dask workers; `python -m benchmarks.dashboard.lessons --lesson discover`):
# 75 s on a quiet 2-core machine, each sampled candidate's whole-data ELBO estimated to a Monte-Carlo standard error of
# 0.1 nats or 4,096 samples per input (30 s before that precision, 4 min then at a load of 9 on 2 cores).
DISCOVER_SECONDS = 90  # what the card promises on a quiet two-core laptop; the lesson benchmark holds it to this
DISCOVER_TAKES = "about a minute and a half on a two-core laptop, several minutes when it is busy with other work"
RESET = "Press ↺ Reset"


def _switch(family: str, what: str) -> Step:
    return Step(f"Choose Model family → {family} on the Model tab", f"{what}; the page asks for a Reset",
                "model", value=family, tab="Model", label="Model family",
                check=("text", "Press Reset to apply"))


def _reset(previous: str) -> Step:
    return Step(RESET, f"the first run's curves stay as dashed lines labelled {previous}; the new model waits for "
                "Start", "reset", watch="elbo", check=("previous", previous))


LESSONS: list[Lesson] = [
    Lesson(
        key="rotation",
        title="Learn rotation invariance on rotated digits",
        text="Every digit is turned by up to ±90°. The marginal likelihood finds the symmetry itself.",
        settings={"model": "svgp", "data.dataset": "digits", "data.rotate": 90.0, "data.subset": 400,
                  "data.test_subset": 300, "model.likelihood": "gaussian", "model.num_inducing": 40,
                  "train.batch_size": 100, "train.learning_rate": 0.03, "train.steps": 400,
                  "train.eval_size": 300},
        compare={"model": "invariant", "model.augmentation": "rotation", "model.likelihood": "gaussian",
                 "model.num_inducing": 40, "model.num_samples": 6, "model.init_rotation": 5.0},
        key_view="elbo", compare_view="range.rotation",
        controls=("data.rotate", "model.init_rotation", "model.num_samples", "train.learning_rate"),
        steps=(
            Step(START, "a plain GP trains and its ELBO climbs", "start", watch="elbo"),
            _switch("invariant", "a GP that averages over rotations of each digit"),
            _reset("svgp"),
            Step(START, "the learned rotation range climbs from 5° towards 90° within seconds and the invariant "
                 "model's ELBO overtakes the dashed plain one", "start", watch="range.rotation"),
        ),
    ),
    Lesson(
        key="symmetry",
        title="The marginal likelihood prefers the symmetric model",
        text=("The target is symmetric, f(x1, x2) = f(x2, x1). The evidence rewards the right symmetry, not just "
              "the fit."),
        settings={"model": "svgp", "data.dataset": "symmetric-2d", "model.num_inducing": 30,
                  "train.batch_size": 0, "train.learning_rate": 0.05, "train.steps": 800},
        compare={"model": "invariant", "model.augmentation": "permutations", "model.num_inducing": 30},
        key_view="elbo", compare_view="test_rmse",
        controls=("model.num_inducing", "train.learning_rate"),
        steps=(
            Step(START, "a plain GP fits the data and its ELBO climbs", "start", watch="elbo"),
            _switch("invariant", "a GP summed over the swap orbit {(x1, x2), (x2, x1)}"),
            _reset("svgp"),
            Step(START, "within seconds the invariant model's ELBO climbs far above the dashed plain one and its "
                 "test RMSE drops below it", "start", watch="test_rmse"),
        ),
    ),
    Lesson(
        key="patches",
        title="Convolutional GPs see patches",
        text=("Tall or wide rectangles, told apart by a GP that sums one function over every 3×3 patch. The "
              "inducing patches show which corners vote tall and which wide."),
        settings={"model": "conv-invariant", "data.dataset": "rectangles",
                  "data.source_options": {"num_train": 400, "num_test": 400},
                  "model.num_inducing": 16, "train.batch_size": 50, "train.learning_rate": 0.03,
                  "train.steps": 400, "train.eval_size": 400},
        compare={"model": "conv-weighted", "model.num_inducing": 16},
        key_view="test_error", compare_view="patch_weights",
        controls=("model.patch_size", "model.num_inducing", "train.learning_rate"),
        steps=(
            Step(START, "the test error falls below 5 % within seconds", "start", watch="test_error"),
            _switch("conv-weighted", "a weight for each patch position"),
            _reset("conv-invariant"),
            Step(START, "its error drops lower still, and the patch-weight map shows where it looks", "start",
                 watch="patch_weights"),
        ),
    ),
    Lesson(
        key="functional",
        title="Invariance as a functional: two moons from two labels",
        text=("Only two points carry labels; the other 198 only say where the data lies. Gradient functionals at "
              "the unlabelled points penalise change along the data."),
        settings={"model": "rkhs", "data.dataset": "two-moons", "data.seed": 1,
                  "data.source_options": {"noise": 0.05}, "model.labelled": 2,
                  "model.sigma": 0.25, "model.nu": 0.0, "model.functionals": "gradient", "train.steps": 200},
        key_view="decision_function",
        controls=("model.lam", "model.sigma"),
        steps=(
            Step(START + " (ν = 0)", "the solver draws a boundary half-way between the two labels, cutting both "
                 "moons", "start", watch="decision_function"),
            Step("Set the invariance weight ν to 1 on the Invariance tab", "the solver re-solves and the boundary "
                 "moves into the gap between the moons (test error about 20 % → 0 %)", "model.nu", value=1.0,
                 tab="Invariance", label="invariance weight ν", watch="test_error",
                 check=("below", "test_error", 5.0)),
        ),
    ),
    Lesson(
        key="prior",
        title="Deep kernel priors: δ and α",
        text=("Each histogram counts the eigenvalues of one random 400×400 matrix with mean I; δ starts at 1000. "
              "The smaller δ, the more random every layer."),
        settings={PAGE_KEY: "prior", "prior.delta": 1000.0, "prior.alpha": 0.0},
        key_view="inverse_wishart_eigenvalues",
        controls=("prior.num_layers",),
        steps=(
            Step("Drag δ down to 10", "the inverse Wishart's eigenvalues spread from one decade to four and the "
                 "prior functions vary more, yet the smallest stays a hundred times above the Wishart's near-zero "
                 "ones", "prior.delta", value=10.0, label="δ (log scale)", watch="inverse_wishart_eigenvalues",
                 check=("text", "δ = 10")),
            Step("Raise α to 2", "the identity in a residual layer lifts the Wishart's near-zero eigenvalues",
                 "prior.alpha", value=2.0, label="α (identity weight)", watch="residual_wishart_eigenvalues",
                 check=("text", "α = 2")),
        ),
    ),
    Lesson(
        key="discover",
        title="Which symmetry does this data have?",
        text=("Every digit is turned by up to ±90°, and nothing tells the lab so. Discover fits one invariant GP per "
              "candidate symmetry and ranks them by the marginal likelihood."),
        settings={PAGE_KEY: "compare", "model": "invariant", "data.dataset": "digits", "data.rotate": 90.0,
                  "data.subset": 300, "data.test_subset": 300},
        key_view=DISCOVER_VIEW,
        controls=("data.rotate", "data.subset"), takes=DISCOVER_TAKES,
        steps=(
            Step("Press ▶ Discover on the Compare page", "none and six candidate symmetries train on Dask, then the "
                 "best two combined; the ranking fills in as each finishes, and the verdict, rotation-invariant up "
                 "to about ±90° and hundreds of nats above none, follows with rotation on top of the ranking "
                 f"(16 runs: {DISCOVER_TAKES})", "discover",
                 watch=DISCOVER_VIEW, label="▶ Discover", check=("verdict", "rotation-invariant up to")),
            Step("Click rotation in the ranking", "its run opens on the Training page, where the learned rotation "
                 "range climbs from 30° to about 90°", "open", value="rotation", label="ranking",
                 watch="range.rotation"),
        ),
    ),
]

BY_KEY: dict[str, Lesson] = {lesson.key: lesson for lesson in LESSONS}


def get_lesson(key: str) -> Lesson | None:
    """The lesson with key `key`, or None."""
    return BY_KEY.get(key)


# -- links -----------------------------------------------------------------------------------------------------------
def _encode(value) -> str:
    """A value as the page's URL carries it (panel's `location.sync` convention, read back by `parse_query`)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))  # true/false, numbers, lists and dicts as JSON


def lesson_query(lesson: Lesson | str, *, teacher: bool = False) -> str:
    """The preset link's query: "?lesson=key&model=…&data.rotate=90…" (`&teacher=1` with `teacher`)."""
    lesson = BY_KEY[lesson] if isinstance(lesson, str) else lesson
    items = [("lesson", lesson.key)] + [(k, _encode(v)) for k, v in lesson.settings.items()]
    if teacher:
        items.append(("teacher", "1"))
    return "?" + urllib.parse.urlencode(items, quote_via=urllib.parse.quote, safe=",:[]{}")


def parse_query(query: str) -> dict:
    """The settings of a query string, decoded as the page decodes them (panel's `parse_query`)."""
    from panel.util import parse_query as panel_parse

    return panel_parse(query if query.startswith("?") else "?" + query)


def split_settings(settings: dict) -> dict:
    """URL-style settings → {"model": family, "data": {...}, "model_config": {...}, "train": {...}, "prior": {...},
    "page": ...}; unknown prefixes raise KeyError."""
    out = {"model": settings.get("model", "svgp"), "data": {}, "model_config": {}, "train": {}, "prior": {},
           "page": settings.get(PAGE_KEY, "training")}
    for key, value in settings.items():
        if key in ("model", PAGE_KEY, "lesson", "teacher"):
            continue
        prefix, _, name = key.partition(".")
        target = {"data": "data", "model": "model_config", "train": "train", "prior": "prior"}.get(prefix)
        if target is None or not name:
            raise KeyError(f"lesson setting {key!r} is not data.x, model.x, train.x, prior.x, model or page")
        out[target][name] = value
    return out


def run_config(settings: dict):
    """The engine's `RunConfig` of a lesson's (or its comparison's) settings."""
    from invlab.train import RunConfig

    parts = split_settings(settings)
    data = {"dataset": "digits", **parts["data"]}
    return RunConfig(model=parts["model"], data=data, model_config=parts["model_config"], train=parts["train"])


def prior_explorer(settings: dict):
    """The prior page's `PriorExplorer` set to a lesson's `prior.*` settings."""
    from invlab.models.dkp import PriorExplorer

    return PriorExplorer(**split_settings(settings)["prior"])


def prior_settings(lesson: Lesson | None) -> dict:
    """The prior page's values a lesson sets ({"delta": 1000.0, "alpha": 0.0}), for `PriorExplorer.param.update`."""
    return split_settings(lesson.settings)["prior"] if lesson is not None else {}


def compare_for_family(lesson: Lesson | None, family: str) -> dict:
    """When a lesson's page switches to the family its comparison run uses, the model settings that run has
    ({"num_inducing": 40, ...}: apply them over the family's page defaults); {} otherwise."""
    if lesson is None or not lesson.compare or lesson.compare.get("model") != family:
        return {}
    return split_settings({"model": family, **lesson.compare})["model_config"]


def visible_controls(lesson: Lesson) -> set[str]:
    """What teacher mode keeps visible: the controls the lesson's steps touch and its `controls` ("model" is the
    family selector; the rest are "data.x" / "model.x" / "train.x" / "prior.x" names). Everything else among the
    controls is hidden."""
    touched = {step.control for step in lesson.steps if step.control not in BUTTONS}
    return touched | set(lesson.controls)


def steps_markdown(lesson: Lesson, folded: bool = False) -> str:
    """The lesson's banner on every page it touches: its title, what it shows and its numbered steps (Markdown,
    every word escaped). `folded` (presenter mode, where the plots need the projector's first screen) puts the
    steps in a disclosure, closed, under the title."""
    title = lesson.title if lesson.title.endswith(("?", "!", ".")) else lesson.title + "."
    lines = [f"**{markdown_text(title)}** {markdown_text(lesson.text)}", ""]
    steps = [f"{i}. {markdown_text(step.words)}" for i, step in enumerate(lesson.steps, 1)]
    if folded:
        return "\n".join([*lines, f"<details><summary>The lesson's {len(steps)} steps</summary>", "", *steps, "",
                          "</details>"])
    return "\n".join(lines + steps)


def control_hidden(lesson: Lesson | None, name: str) -> bool:
    """True when teacher mode with `lesson` hides control `name` ("model", "data.rotate", ...)."""
    return lesson is not None and name not in visible_controls(lesson)
