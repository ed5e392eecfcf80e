"""Which curves a run has, known when the run is built (before its first step): its family's logged loss parts
(`ModelSpec.terms`) and the test metrics of its data's task, so the page lays out every plot before data arrives."""
from __future__ import annotations

TEST_METRICS = {"classification": ("test_error", "test_nlpd"), "regression": ("test_rmse", "test_nlpd")}


def curve_layout(model: str, task: str | None, logged=()) -> tuple[str, ...]:
    """The metric names a run of family `model` on data of `task` ("classification" / "regression", None when not
    known) will log, with the names already `logged` (an opened run's history, which decides when it holds no ELBO):
    `elbo` and its parts for a variational family, `loss` where the family logs no ELBO, the test metrics of the
    task."""
    from invlab.models import REGISTRY

    spec = REGISTRY.get(model)
    terms = tuple(spec.terms) if spec is not None else ()
    if logged and "elbo" not in logged:  # a stored run (a user's own loop, say) logged what it logged
        terms = ()
    names = list(terms) if "elbo" in terms else ["loss", *terms]
    names += TEST_METRICS.get(task or "", ())
    names += [name for name in logged if name not in names and not (name == "loss" and "elbo" in names)]
    return tuple(dict.fromkeys(names))
