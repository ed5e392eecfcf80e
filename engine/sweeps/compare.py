"""Comparing a sweep's runs by their whole-training-set ELBO (van der Wilk et al. 2018: the marginal likelihood chooses
the invariance).

`comparison(store, sweep_id)` gathers the sweep's stored runs: one row per run (its swept values, seed, ELBO over
the whole training set, test error, NLPD, status, the invariance values it learned) and one row per point, with
mean and sample standard deviation over seeds. ELBOs are only comparable between runs of the same data (dataset and
options), the same likelihood and the same estimator of the bound; when the runs differ in one of these,
`comparable` is False and `reason` says where.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from ..train.states import RunStatus
from .spec import SweepSpec


def mean_sd(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation of the finite values (sd None with fewer than two; both None with none)."""
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values:
        return None, None
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def data_identity(config_json: str) -> str:
    """The run's data, every option filled in with its default: what must agree for ELBOs to be compared."""
    from ..train import RunConfig, config_values

    config = RunConfig.from_json(config_json)
    try:
        values = config_values(config.data_config())
    except Exception:  # noqa: BLE001 — a config the engine no longer accepts still has its raw options
        values = dict(config.data)
    return json.dumps(values, sort_keys=True, default=str)


@dataclass
class Comparison:
    """A sweep's runs compared by whole-data ELBO: each run's row, the points (mean ± sd over seeds of ELBO, test error
    and NLPD), whether they may share an axis and, if not, why."""
    sweep_id: int
    name: str
    axes: list[str]
    runs: list[dict]
    groups: list[dict]
    comparable: bool
    reason: str
    total: int = 0  # runs planned
    store: object = field(default=None, repr=False, compare=False)
    status: str = ""  # the sweep's: running, interrupted (resumable), finished, ...

    def history(self, run_id: int, metric: str = "elbo") -> tuple[list[int], list[float]]:
        """(steps, values) of a run's minibatch ELBO (or another metric) over training."""
        return self.store.metrics.read(run_id, [metric]).get(metric, ([], []))

    def ranked(self) -> list[dict]:
        """The groups sorted by mean ELBO, best first (groups without an ELBO last)."""
        return sorted(self.groups, key=lambda g: (g["elbo_mean"] is None, -(g["elbo_mean"] or 0.0)))

    def to_dict(self) -> dict:
        """The comparison as plain JSON-ready data (what `invlab compare --json` prints), points ranked by mean ELBO."""
        return {"sweep_id": self.sweep_id, "name": self.name, "axes": self.axes, "runs": self.runs,
                "groups": self.ranked(), "comparable": self.comparable, "reason": self.reason, "total": self.total,
                "status": self.status}


def comparison(store, sweep_id: int) -> Comparison:
    """Read sweep `sweep_id` from `store` and compare its runs: rows per run, points grouped over seeds, and whether
    data, likelihood and estimator agree so that ELBOs are comparable."""
    record = store.sweeps.get(sweep_id)
    spec = SweepSpec.from_json(record.spec)
    axes = list(spec.vary)
    runs, identities = [], {"data": {}, "likelihood": {}, "estimator": {}}
    for r in store.sweeps.runs(sweep_id):
        info = store.sweeps.info(r.id)
        point = info.get("point", {})
        row = {"run_id": r.id, "key": r.sweep_key, "seed": info.get("seed"),
               **{axis: point.get(axis) for axis in axes},
               "full_elbo": r.full_elbo, "test_error": r.test_error, "nlpd": r.test_nlpd, "test_rmse": r.test_rmse,
               "status": r.status, "learned": info.get("learned") or {}, "ranges": info.get("ranges") or {},
               "seconds": info.get("seconds"), "message": r.message}
        runs.append(row)
        if r.status == RunStatus.FINISHED:
            identities["data"].setdefault(data_identity(r.config), []).append(r.sweep_key)
            identities["likelihood"].setdefault(info.get("likelihood") or "", []).append(r.sweep_key)
            identities["estimator"].setdefault(estimator_kind(info.get("estimator") or ""), []).append(r.sweep_key)
    reasons = _reasons(identities)
    comparable = not reasons
    reason = ("all runs share the data, likelihood and estimator: their ELBOs compare on one axis" if comparable
              else "not comparable on one ELBO axis: " + "; ".join(reasons))

    groups: dict[tuple, list[dict]] = {}
    for row in runs:
        groups.setdefault(tuple(json.dumps(row[a], sort_keys=True) for a in axes), []).append(row)
    group_rows = []
    for members in groups.values():
        ok = [m for m in members if m["status"] == RunStatus.FINISHED]
        elbo_mean, elbo_sd = mean_sd([m["full_elbo"] for m in ok])
        error_mean, error_sd = mean_sd([m["test_error"] for m in ok])
        nlpd_mean, nlpd_sd = mean_sd([m["nlpd"] for m in ok])
        rmse_mean, rmse_sd = mean_sd([m["test_rmse"] for m in ok])
        learned = {}
        for name in sorted({k for m in ok for k in m["learned"]}):
            mean, sd = mean_sd([m["learned"].get(name) for m in ok])
            learned[name] = {"mean": mean, "sd": sd}
        group_rows.append({**{a: members[0][a] for a in axes}, "n": len(ok), "failed": len(members) - len(ok),
                           "elbo_mean": elbo_mean, "elbo_sd": elbo_sd, "error_mean": error_mean, "error_sd": error_sd,
                           "nlpd_mean": nlpd_mean, "nlpd_sd": nlpd_sd, "rmse_mean": rmse_mean, "rmse_sd": rmse_sd,
                           "learned": learned,
                           "run_ids": [m["run_id"] for m in members]})
    return Comparison(sweep_id, record.name, axes, runs, group_rows, comparable, reason, record.total, store,
                      record.status)


def estimator_kind(phrase: str) -> str:
    """What an ELBO estimate is, for comparing runs (`phrase`: a run's stored estimator): exact evaluations and
    unbiased sampled ones estimate the same ELBO, whatever their sample counts ("an unbiased estimate"); a plug-in
    ("plug-in, bias …") is biased by its own amount; an older run's phrase ("6 samples per input") stays itself."""
    if "plug-in" in phrase:
        return phrase
    if phrase.startswith("exact") or phrase.endswith("(unbiased)"):
        return "an unbiased estimate (exact, or sampled to a stated precision)"
    return phrase


def _reasons(identities: dict[str, dict]) -> list[str]:
    """Why the finished runs' ELBOs do not share one axis (`identities`: data / likelihood / estimator → the keys of
    the runs with each); empty when they do."""
    reasons = []
    if len(identities["data"]) > 1:
        differing = _differing_options(list(identities["data"]))
        reasons.append(f"the runs use different data ({differing}); an ELBO is only comparable on the same data")
    if len(identities["likelihood"]) > 1:
        reasons.append("the runs use different likelihoods (" + ", ".join(sorted(identities["likelihood"])) + ")")
    if len(identities["estimator"]) > 1:
        reasons.append("the runs estimate the ELBO differently (" + "; ".join(sorted(identities["estimator"])) + ")")
    return reasons


def _differing_options(identities: list[str]) -> str:
    dicts = [json.loads(i) for i in identities]
    keys = sorted({k for d in dicts for k in d if len({json.dumps(x.get(k), sort_keys=True) for x in dicts}) > 1})
    return ", ".join(f"data.{k}: " + " / ".join(sorted({json.dumps(d.get(k), sort_keys=True) for d in dicts}))
                     for k in keys)


__all__ = ["Comparison", "comparison", "data_identity", "estimator_kind"]
