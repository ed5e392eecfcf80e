"""The report of a discover run: candidates ranked by whole-training-set ELBO over seeds, with the log Bayes factor
against no invariance, the learned ranges (final value and path over training), test figures, time per candidate,
honest notes on the statistics and a one-sentence verdict.

The log Bayes factor of a candidate against `none` is estimated by the difference of their ELBOs (lower bounds of
the log marginal likelihoods, van der Wilk et al. 2018 sec. 3), paired by seed: its mean ± sd is over the seeds both
finished. A difference is *within noise* when it is at most sqrt(max(sd_a, sd_b)² + mc_a² + mc_b²): the larger of the
two candidates' ELBO standard deviations over seeds and both mean ELBOs' Monte-Carlo standard errors (each
sqrt(Σ se_i²)/n over its seeds' evaluations; 0 when exact; unknown for a sweep stored before runs recorded it, which
the notes say). With one seed and no Monte-Carlo error there is no noise figure and the report says so. Learned
ranges are judged (`discover_ranges`): a warp or a range under half a pixel is never reported as an invariance. The
ranking is by mean ELBO, except that within noise the simpler group wins, so the verdict's candidate comes first
(`discover_verdict`); the held-out test NLPD gives a second opinion (`discover_second`). `to_dict()` is the JSON form
(`{"ranking": [...], "verdict", "second_opinion", ...}`) that `invlab discover --json` prints.
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field

from ..train.states import RunStatus, SweepStatus
from .compare import mean_sd
from .discover_labels import labels_of, relabel
from .discover_names import NONE, SWEEP_PREFIX, point_name
from .discover_notes import statistics_notes
from .discover_ranges import judge, kind_of
from .discover_second import SecondOpinion, second_opinion
from .discover_verdict import beats, combined_parts, order_notes, preferred_order, spread, verdict
from .spec import SweepSpec


@dataclass
class CandidateResult:
    """One candidate over its seeds: ELBO (nats, whole training set) mean ± sd and the Monte-Carlo standard error of
    that mean (sqrt(Σ se_i²)/n; None when a seed's run stored none), log Bayes factor against `none` (nats) mean ±
    sd, learned ranges (final mean ± sd and the first seed's path over training: (steps, values)) and their
    judgements (`discover_ranges`), test error (fraction) or RMSE (data units), NLPD, seconds per run, and its
    failed runs' messages."""

    candidate: str
    elbos: dict[int, float] = field(default_factory=dict)  # seed -> whole-data ELBO
    elbo_mean: float | None = None
    elbo_sd: float | None = None
    log_bf: float | None = None
    log_bf_sd: float | None = None
    learned: dict[str, dict] = field(default_factory=dict)  # name -> {"mean", "sd", "steps", "values"}
    test_error: tuple[float | None, float | None] = (None, None)
    test_rmse: tuple[float | None, float | None] = (None, None)
    nlpd: tuple[float | None, float | None] = (None, None)
    seconds: float | None = None
    finished: int = 0
    failed: list[str] = field(default_factory=list)
    run_ids: list[int] = field(default_factory=list)
    estimator: str = ""
    label: str = ""  # as a reader sees it: 'permutations: age, height' for the stored 'permutations:0,1'
    elbo_mc_se: float | None = None  # nats: the Monte-Carlo standard error of elbo_mean
    mc_ses: dict[int, float] = field(default_factory=dict)  # seed -> its evaluation's Monte-Carlo standard error
    elbo_bias: float | None = None  # nats, mean over seeds: the sampled estimate − its limit (0: unbiased)
    input_shape: tuple[int, ...] | None = None  # one input's shape, which sizes a range in pixels
    judgements: list = field(default_factory=list)  # RangeJudgement per learned range

    def __post_init__(self):
        self.label = self.label or self.candidate

    def to_dict(self) -> dict:
        """The candidate as plain JSON-ready data."""
        return {"candidate": self.candidate, "label": self.label, "elbo_mean": self.elbo_mean, "elbo_sd": self.elbo_sd,
                "log_bf": self.log_bf, "log_bf_sd": self.log_bf_sd,
                "elbo_mc_se": self.elbo_mc_se, "elbo_bias": self.elbo_bias,
                "learned": {k: {"final": v["mean"], "sd": v["sd"], "path": [v["steps"], v["values"]],
                                "kind": kind_of(self, k)} for k, v in self.learned.items()},
                "test_error": self.test_error[0], "test_error_sd": self.test_error[1],
                "test_rmse": self.test_rmse[0], "test_rmse_sd": self.test_rmse[1],
                "nlpd": self.nlpd[0], "nlpd_sd": self.nlpd[1], "seconds": self.seconds,
                "seeds": self.finished, "failed": self.failed, "run_ids": self.run_ids, "estimator": self.estimator}


@dataclass
class DiscoverReport:
    """A discover sweep's candidates ranked by mean whole-data ELBO (within noise the simpler group first, so the
    verdict's candidate leads; failed-only candidates last), the budget every
    candidate had, notes on the statistics, whether the sweep is partial, and the verdict sentence."""

    sweep_id: int
    dataset: str
    status: str
    ranking: list[CandidateResult]
    budget: dict
    notes: list[str]
    verdict: str
    partial: bool
    total: int
    stored: int
    target_name: str | None = None  # a table's target column, which names the RMSE's units; None: no names
    second: SecondOpinion | None = None  # the held-out test figures' opinion of the verdict

    def to_dict(self) -> dict:
        """The report as JSON-ready data: `ranking` (best first), verdict, second opinion, notes, budget, partial,
        sweep id."""
        second = self.second.to_dict() if self.second is not None else None
        return {"ranking": [c.to_dict() for c in self.ranking], "verdict": self.verdict, "second_opinion": second,
                "notes": self.notes,
                "budget": self.budget, "partial": self.partial, "status": self.status, "sweep_id": self.sweep_id,
                "dataset": self.dataset, "runs_planned": self.total, "runs_stored": self.stored,
                "target_name": self.target_name}

    def row(self, name: str) -> CandidateResult | None:
        """The candidate called `name` (its stored name or its label), or None."""
        return next((c for c in self.ranking if name in (c.candidate, c.label)), None)


def budget_of(spec: SweepSpec) -> dict:
    """What every candidate got: steps, batch size, learning rate, inducing points M, samples per input S, seeds, and
    the Monte-Carlo standard error the final ELBO was estimated to (`elbo_precision`, nats; 0: one evaluation)."""
    model = spec.base.model_params()
    train = spec.base.train_config()
    return {"steps": int(train.steps), "batch_size": int(train.batch_size), "learning_rate": float(train.learning_rate),
            "optimizer": spec.base.optimizer_name(), "num_inducing": int(model.num_inducing),
            "num_samples": int(model.num_samples), "seeds": list(spec.seeds),
            "elbo_precision": float(getattr(train, "elbo_precision", 0.0) or 0.0)}


def _collect(store, sweep_id: int, spec: SweepSpec) -> tuple[dict[str, CandidateResult], int]:
    order = [point_name(point) for point in spec.points()]
    results = {name: CandidateResult(name) for name in order}
    runs = store.sweeps.runs(sweep_id)
    rows: dict[str, list] = {name: [] for name in order}
    for r in runs:
        info = store.sweeps.info(r.id)
        name = point_name(info.get("point") or {})
        result = results.setdefault(name, CandidateResult(name))
        rows.setdefault(name, [])
        result.run_ids.append(r.id)
        if r.status != RunStatus.FINISHED or r.full_elbo is None or not math.isfinite(r.full_elbo):
            result.failed.append(f"seed {info.get('seed')}: {r.message or r.status}")
            continue
        result.elbos[int(info.get("seed", 0))] = float(r.full_elbo)
        rows[name].append((r, info))
    for name, members in rows.items():
        _summarise(results[name], members, store)
    return results, len(runs)


def _summarise(result: CandidateResult, members: list, store) -> None:
    """Fill `result` from its finished runs `members` ((run record, sweep info) pairs): means over seeds, the
    Monte-Carlo error, the learned ranges with their paths, and their judgements."""
    result.finished = len(members)
    result.elbo_mean, result.elbo_sd = mean_sd(list(result.elbos.values()))
    result.test_error = mean_sd([r.test_error for r, _ in members])
    result.test_rmse = mean_sd([r.test_rmse for r, _ in members])
    result.nlpd = mean_sd([r.test_nlpd for r, _ in members])
    result.seconds = mean_sd([info.get("seconds") for _, info in members])[0]
    members.sort(key=lambda m: m[1].get("seed", 0))
    _monte_carlo(result, [info for _, info in members])
    for key in sorted({k for _, info in members for k in (info.get("learned") or {})}):
        mean, sd = mean_sd([(info.get("learned") or {}).get(key) for _, info in members])
        steps, values = store.metrics.read(members[0][0].id, [f"range.{key}"]).get(f"range.{key}", ([], []))
        values = [None if v is None else abs(v) if "." not in key else v for v in values]
        result.learned[key] = {"mean": mean, "sd": sd, "steps": list(steps), "values": values}
    result.judgements = judge(result) if result.learned else []


def _monte_carlo(result: CandidateResult, infos: list[dict]) -> None:
    """The candidate's Monte-Carlo error (sqrt(Σ se_i²)/n; None unless every seed's run stored its se), mean bias,
    estimator phrases and input shape, from its finished runs' sweep infos (seed order)."""
    # a run stored before the precision was recorded: an exact estimate (nothing sampled) has no Monte-Carlo error
    ses = {int(info.get("seed", 0)): info.get("elbo_mc_se", 0.0 if _exact(info.get("estimator")) else None)
           for info in infos}
    if ses and all(isinstance(se, (int, float)) and math.isfinite(se) for se in ses.values()):
        result.mc_ses = {seed: float(se) for seed, se in ses.items()}
        result.elbo_mc_se = math.sqrt(sum(se * se for se in result.mc_ses.values())) / len(ses)
    biases = [info.get("elbo_bias") for info in infos if isinstance(info.get("elbo_bias"), (int, float))]
    result.elbo_bias = sum(biases) / len(biases) if biases else None
    phrases = list(dict.fromkeys(str(info["estimator"]) for info in infos if info.get("estimator")))
    result.estimator = "; ".join(phrases) or result.estimator
    shape = next((info.get("input_shape") for info in infos if info.get("input_shape")), None)
    result.input_shape = tuple(int(s) for s in shape) if shape else None


def _exact(estimator) -> bool:
    """Whether a stored estimator phrase says the ELBO was computed exactly ('exact', 'exact; likelihood …')."""
    return isinstance(estimator, str) and estimator.startswith("exact")


def _bayes_factors(results: dict[str, CandidateResult]) -> None:
    base = results.get(NONE)
    for result in results.values():
        if base is None or result.elbo_mean is None or base.elbo_mean is None:
            continue
        paired = [result.elbos[s] - base.elbos[s] for s in result.elbos if s in base.elbos]
        if paired:
            result.log_bf, result.log_bf_sd = mean_sd(paired)
        else:
            result.log_bf = result.elbo_mean - base.elbo_mean


def is_discover(spec: SweepSpec) -> bool:
    """Whether a stored sweep was a discover run (it varies only the invariant GP's augmentation)."""
    return (spec.base.model == "invariant" and "model.augmentation" in spec.vary
            and set(spec.vary) <= {"model.augmentation", "model.orbit_coordinates", "model.then_augmentation"})


def discover_report(store, sweep_id: int) -> DiscoverReport:
    """Rank the stored runs of discover sweep `sweep_id` (finished so far; a sweep that did not finish gives a
    partial report)."""
    from ..errors import ConfigError

    record = store.sweeps.get(sweep_id)
    spec = SweepSpec.from_json(record.spec)
    if not is_discover(spec):
        raise ConfigError(f"sweep {sweep_id} ({record.name}) is not a discover run; compare it with "
                          f"`invlab compare {sweep_id}`")
    results, stored = _collect(store, sweep_id, spec)
    labels = labels_of(list(results), spec.base.data)  # a group on columns by the columns' names
    for result in results.values():
        result.label = labels[result.candidate]
    _bayes_factors(results)
    by_elbo = sorted(results.values(), key=lambda c: (c.elbo_mean is None, -(c.elbo_mean or 0.0)))
    ranking, moved = preferred_order(by_elbo)  # the verdict's candidate first: within noise the simpler group wins
    budget = budget_of(spec)
    total = int(record.total or len(spec.vary["model.augmentation"]) * len(spec.seeds))
    finished_or_failed = sum(c.finished + len(c.failed) for c in ranking)
    partial = record.status in (SweepStatus.INTERRUPTED, SweepStatus.RUNNING) or finished_or_failed < total
    notes = [relabel(n, labels) for n in statistics_notes(by_elbo, budget, partial, record.status)
             + order_notes(by_elbo, moved)]
    dataset = str(spec.base.data.get("dataset", ""))
    if record.name.startswith(SWEEP_PREFIX):
        dataset = dataset or record.name[len(SWEEP_PREFIX):]
    second = second_opinion(by_elbo)
    second = SecondOpinion(second.agrees, relabel(second.text, labels))
    said = verdict(by_elbo) + ("" if second.agrees else "; but the held-out test figures disagree (see the second "
                                                         "opinion)")
    return DiscoverReport(sweep_id, dataset, record.status, ranking, budget, notes, relabel(said, labels), partial,
                          total, stored, target_column(json.dumps(spec.base.data, sort_keys=True, default=str)),
                          second)


@functools.lru_cache(maxsize=32)
def target_column(data_json: str) -> str | None:
    """The target column of the table a sweep's data settings (`RunConfig.data` as JSON) name, which names the test
    RMSE's units; None for data with no column names (the bundled sets) or data that cannot be read now."""
    from ..data import sources
    from ..train.config import RunConfig

    name = json.loads(data_json).get("dataset")
    if not isinstance(name, str) or sources.file_path(name) is None:
        return None  # a registered data set: no column names
    try:
        dataset = RunConfig(data=json.loads(data_json)).data_config().load()
    except Exception:  # noqa: BLE001 — the report is shown without the name; the runs said why the data failed
        return None
    target = (getattr(dataset, "metadata", None) or {}).get("target")
    return None if target is None else str(target)


def ranking_json(report: DiscoverReport) -> str:
    """The report as one line of JSON (what `invlab discover --json` prints last)."""
    return json.dumps(report.to_dict(), default=float)


__all__ = ["CandidateResult", "DiscoverReport", "discover_report", "ranking_json", "verdict", "budget_of",
           "is_discover", "mean_sd", "spread", "beats", "combined_parts", "statistics_notes"]
