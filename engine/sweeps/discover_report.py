"""The report of a discover run: candidates ranked by whole-training-set ELBO over seeds, with the log Bayes factor
against no invariance, the learned ranges (final value and path over training), test figures, time per candidate,
honest notes on the statistics and a one-sentence verdict.

The log Bayes factor of a candidate against `none` is estimated by the difference of their ELBOs (lower bounds of
the log marginal likelihoods, van der Wilk et al. 2018 sec. 3), paired by seed: its mean ± sd is over the seeds both
finished. A difference is *within noise* when it is smaller than its spread across seeds (the larger of the two
candidates' ELBO standard deviations, or the sd of the paired differences); with one seed there is no spread and the
report says so. The ranking is by mean ELBO, except that within noise the simpler group wins, so the verdict's
candidate comes first (`discover_verdict`). `to_dict()` is the JSON form (`{"ranking": [...], ...}`) that
`invlab discover --json` prints.
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
from .discover_verdict import beats, combined_parts, order_notes, preferred_order, spread, verdict
from .spec import SweepSpec


@dataclass
class CandidateResult:
    """One candidate over its seeds: ELBO (nats, whole training set) mean ± sd, log Bayes factor against `none`
    (nats) mean ± sd, learned ranges (final mean ± sd and the first seed's path over training: (steps, values)),
    test error (fraction) or RMSE (data units), NLPD, seconds per run, and its failed runs' messages."""

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

    def __post_init__(self):
        self.label = self.label or self.candidate

    def to_dict(self) -> dict:
        """The candidate as plain JSON-ready data."""
        return {"candidate": self.candidate, "label": self.label, "elbo_mean": self.elbo_mean, "elbo_sd": self.elbo_sd,
                "log_bf": self.log_bf, "log_bf_sd": self.log_bf_sd,
                "learned": {k: {"final": v["mean"], "sd": v["sd"], "path": [v["steps"], v["values"]]}
                            for k, v in self.learned.items()},
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

    def to_dict(self) -> dict:
        """The report as JSON-ready data: `ranking` (best first), verdict, notes, budget, partial, sweep id."""
        return {"ranking": [c.to_dict() for c in self.ranking], "verdict": self.verdict, "notes": self.notes,
                "budget": self.budget, "partial": self.partial, "status": self.status, "sweep_id": self.sweep_id,
                "dataset": self.dataset, "runs_planned": self.total, "runs_stored": self.stored,
                "target_name": self.target_name}

    def row(self, name: str) -> CandidateResult | None:
        """The candidate called `name` (its stored name or its label), or None."""
        return next((c for c in self.ranking if name in (c.candidate, c.label)), None)


def budget_of(spec: SweepSpec) -> dict:
    """What every candidate got: steps, batch size, learning rate, inducing points M, samples per input S, seeds."""
    model = spec.base.model_params()
    train = spec.base.train_config()
    return {"steps": int(train.steps), "batch_size": int(train.batch_size), "learning_rate": float(train.learning_rate),
            "optimizer": spec.base.optimizer_name(), "num_inducing": int(model.num_inducing),
            "num_samples": int(model.num_samples), "seeds": list(spec.seeds)}


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
        result.estimator = info.get("estimator") or result.estimator
        result.elbos[int(info.get("seed", 0))] = float(r.full_elbo)
        rows[name].append((r, info))
    for name, members in rows.items():
        result = results[name]
        result.finished = len(members)
        result.elbo_mean, result.elbo_sd = mean_sd(list(result.elbos.values()))
        result.test_error = mean_sd([r.test_error for r, _ in members])
        result.test_rmse = mean_sd([r.test_rmse for r, _ in members])
        result.nlpd = mean_sd([r.test_nlpd for r, _ in members])
        result.seconds = mean_sd([info.get("seconds") for _, info in members])[0]
        members.sort(key=lambda m: m[1].get("seed", 0))
        for key in sorted({k for _, info in members for k in (info.get("learned") or {})}):
            mean, sd = mean_sd([(info.get("learned") or {}).get(key) for _, info in members])
            steps, values = store.metrics.read(members[0][0].id, [f"range.{key}"]).get(f"range.{key}", ([], []))
            values = [None if v is None else abs(v) if "." not in key else v for v in values]
            result.learned[key] = {"mean": mean, "sd": sd, "steps": list(steps), "values": values}
    return results, len(runs)


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


def statistics_notes(ranking: list[CandidateResult], budget: dict, partial: bool, status: str) -> list[str]:
    """What a reader must know to trust the ranking: the budget every candidate had, whether the report is partial,
    which neighbours are within the seeds' spread, where the seeds disagree on the order, differing estimators, stage
    2's outcome, candidates not run, and each failure with its reason."""
    notes = [f"every candidate: {budget['steps']} steps of {budget['optimizer']} (learning rate "
             f"{budget['learning_rate']:g}, batch {budget['batch_size'] or 'all'}), M = {budget['num_inducing']} "
             f"inducing points, S = {budget['num_samples']} samples per input (a finite orbit's whole orbit when "
             f"smaller), seeds {', '.join(map(str, budget['seeds']))}"]
    if partial:
        notes.append(f"partial: the run was {status} before every candidate finished; the ranking covers what did")
    ok = [c for c in ranking if c.elbo_mean is not None]
    if len(budget["seeds"]) < 2 or all(c.elbo_sd is None for c in ok):
        notes.append("one seed per candidate: there is no seed spread to judge the differences by")
    for a, b in zip(ok, ok[1:]):
        noise = spread(a, b)
        if noise is not None and a.elbo_mean - b.elbo_mean <= noise:
            notes.append(f"{a.candidate} and {b.candidate} are within noise: ELBO difference "
                         f"{a.elbo_mean - b.elbo_mean:.3g} nats ≤ seed spread {noise:.3g}")
    seeds = sorted({s for c in ok for s in c.elbos})
    orders = {s: [c.candidate for c in sorted((c for c in ok if s in c.elbos), key=lambda c: -c.elbos[s])]
              for s in seeds}
    overall = [c.candidate for c in ok]
    for s, order in orders.items():
        if order != [n for n in overall if n in order]:
            notes.append(f"seeds disagree on the order: seed {s} ranks {' > '.join(order)}")
    estimators: dict[str, list[str]] = {}
    for c in ok:
        estimators.setdefault(c.estimator or "unknown", []).append(c.candidate)
    if len(estimators) > 1:
        notes.append("the ELBOs are estimated differently: " + "; ".join(f"{e} for {', '.join(names)}" for e, names in
                                                                        estimators.items())
                     + " (a sampled estimate is unbiased, with its own Monte-Carlo noise at one evaluation seed)")
    notes.extend(_combination_notes(ranking))
    unrun = [c.candidate for c in ranking if not c.finished and not c.failed]
    if unrun:
        notes.append(f"not run before the sweep stopped: {', '.join(unrun)}")
    for c in ranking:
        for message in c.failed:
            notes.append(f"{c.candidate} failed ({message}); it is left out of its mean")
    return notes


def _combination_notes(ranking: list[CandidateResult]) -> list[str]:
    rows = {c.candidate: c for c in ranking}
    notes = []
    for c in ranking:
        parts = combined_parts(c.candidate)
        if len(parts) < 2 or c.elbo_mean is None:
            continue
        first = rows.get(parts[0])
        if first is None or first.elbo_mean is None:
            continue
        gain = c.elbo_mean - first.elbo_mean
        noise = spread(c, first)
        spread_text = f" (seed spread {noise:.3g})" if noise is not None else ""
        if beats(c, first):
            outcome = f"improves the ELBO of {parts[0]} by {gain:.3g} nats{spread_text}: kept"
        elif beats(first, c):
            outcome = f"lowers the ELBO of {parts[0]} by {-gain:.3g} nats{spread_text}: {parts[0]} alone is better"
        else:
            outcome = (f"changes the ELBO of {parts[0]} by {gain:.3g} nats, within noise{spread_text}: {parts[0]} "
                       "alone is preferred")
        notes.append(f"stage 2: {c.candidate} {outcome}; combinations of more than two are not tried")
    return notes


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
    return DiscoverReport(sweep_id, dataset, record.status, ranking, budget, notes,
                          relabel(verdict(by_elbo), labels), partial,
                          total, stored, target_column(json.dumps(spec.base.data, sort_keys=True, default=str)))


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
