"""Which invariances does a data set have? Candidate invariant GPs compared by the marginal likelihood (van der Wilk et
al. 2018: van der Wilk, Bauer, John & Hensman 2018, "Learning invariances using the marginal likelihood").

`plan_candidates(data)` lists the candidates for a data config: `none` (no invariance) and every registered
augmentation or orbit whose `inputs` apply to the data (images: rotation, affine, deformation, rot90, flips,
cyclic_shifts ...; vectors: permutations, sign_flips ...; plugin orbits alike), each with its ranges learned where it
has any. `run_candidates(plan)` trains them all, over seeds, as one sweep (on Dask, or in this process with
`serial=True`), stores every run, and calls `on_result` with each finished (or failed) run so a page can fill a
table live. `invlab.sweeps.discover_report.discover_report(store, sweep_id)` ranks what finished.

Why the comparison is fair: every candidate is the *same* model family (the invariant GP), with the same base kernel,
likelihood, inducing budget M, samples per input S (capped at a finite orbit's size P, where the sum is exact), and
the same optimiser, steps, batch size and learning rate. The baseline `none` is that invariant GP with the one-element
identity orbit {x}: its kernel sum over the orbit is k itself, so it is the plain SVGP built by the same code. Only the
orbit differs, so the difference of whole-training-set ELBOs is a log Bayes factor estimate between invariances.
"""
from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field

from ..errors import ConfigError, InvlabError
from ..train import RunConfig
from ..train.states import RunStatus, SweepEventKind, SweepStatus
from .discover_combine import next_combination, with_combination
from .discover_labels import group_label
from .discover_names import BASELINE, COMBINED, NONE, SWEEP_PREFIX, candidate_name, point_name  # noqa: F401
from .scheduler import check_scheduler, require_dask
from .spec import SweepSpec

DEFAULT_SEEDS = 3
DEFAULT_STEPS = 300
DEFAULT_MODEL = {"num_inducing": 30, "num_samples": 6, "num_predict_samples": 16, "init_rotation": 30.0,
                 "learn_ranges": True, "ranges_around_identity": True}
DEFAULT_TRAIN = {"batch_size": 100, "learning_rate": 0.02, "eval_every": 0, "log_every": 10, "elbo_precision": 0.1}


@dataclass
class Candidate:
    """One candidate invariance: its `name` in the report ('none', 'rotation', 'permutations:0,1', ...), the
    registered augmentation it trains with, the names of its learnable ranges (empty for a finite orbit), and the
    coordinates a named group acts on ('' for all)."""

    name: str
    augmentation: str
    ranges: list[str] = field(default_factory=list)
    coordinates: str = ""


@dataclass
class DiscoverPlan:
    """What a discover run trains: the candidates (the baseline first), the registered ones that do not apply and
    why, the inputs' kind ('image' or 'vector') and shape, the sweep that runs them, and the inputs' column names
    (None for data without names)."""

    data: dict
    kind: str
    input_shape: tuple[int, ...]
    candidates: list[Candidate]
    skipped: dict[str, str]
    spec: SweepSpec
    input_names: tuple[str, ...] | None = None

    @property
    def names(self) -> list[str]:
        """The candidates' names, the baseline first."""
        return [c.name for c in self.candidates]

    def label(self, name: str) -> str:
        """Candidate `name` as a reader sees it: a group on coordinates by its columns ('permutations: age, height')."""
        return group_label(name, self.input_names)


def parse_orbit(text: str) -> tuple[str, str]:
    """`--orbit NAME` or `NAME:COORDINATES` ('permutations:0,1') as (registered name, coordinates text)."""
    name, _, coordinates = str(text).partition(":")
    return name.strip(), coordinates.replace(" ", "")


def _inputs(data: dict) -> tuple[str, tuple[int, ...], tuple[str, ...] | None]:
    """The data's kind ('image' or 'vector'), one input's shape and its column names (None: unnamed), from loading it
    once here."""
    config = RunConfig("invariant", dict(data), {}, {})
    try:
        dataset = config.data_config().load()
    except InvlabError as err:
        raise ConfigError(f"data: {err}") from None
    shape = tuple(int(s) for s in dataset.X_train.shape[1:])
    names = getattr(dataset, "feature_names", None)
    return ("image" if len(shape) == 3 else "vector"), shape, (tuple(names) if names else None)


def applicable(kind: str, input_shape: tuple[int, ...], orbits: list[str] | None = None
               ) -> tuple[list[Candidate], dict[str, str]]:
    """The registered augmentations that apply to inputs of `kind` and `input_shape` as candidates (`orbits`: only
    these, by registered name), and those that do not, with the reason."""
    from .. import transforms
    from ..parameters import learnables

    names = [n for n in transforms.REGISTRY.names() if n not in ("auto", BASELINE)]
    wanted = [(n, "") for n in names]
    if orbits is not None:
        wanted = [parse_orbit(o) for o in orbits]
        unknown = [o for o, (n, _) in zip(orbits, wanted) if n not in names]
        if unknown:
            raise ConfigError(f"--orbit {unknown[0]!r} is not a registered augmentation or orbit; registered: "
                              f"{', '.join(names)}")
        for o, (n, coordinates) in zip(orbits, wanted):
            if coordinates and "coordinates" not in transforms.REGISTRY.parts[n].options:
                takes = [m for m in names if "coordinates" in transforms.REGISTRY.parts[m].options]
                raise ConfigError(f"--orbit {o!r}: {n} takes no coordinates; groups on named coordinates are "
                                  f"{', '.join(takes)} (e.g. --orbit permutations:0,1)")
    found, skipped = [], {}
    for name, coordinates in wanted:
        part = transforms.REGISTRY.parts[name]
        label = candidate_name(name, coordinates)
        if kind not in part.inputs:
            skipped[label] = f"acts on {' and '.join(i + 's' for i in part.inputs)}, these inputs are {kind}s"
            continue
        try:
            built = transforms.build_augmentation(name, input_shape, coordinates=coordinates)
        except InvlabError as err:
            skipped[label] = str(err)
            continue
        found.append(Candidate(label, name, list(built.range_values()) if learnables(built) else [], coordinates))
    if orbits is not None and skipped:  # asked for by name: refused with the reason, not left out in silence
        label, reason = next(iter(skipped.items()))
        raise ConfigError(f"--orbit {label} does not apply to these {kind} inputs of shape {input_shape}: {reason}")
    return found, skipped


def plan_candidates(data: dict, *, seeds: int | list[int] = DEFAULT_SEEDS, steps: int = DEFAULT_STEPS,
                    orbits: list[str] | None = None, model_config: dict | None = None, train: dict | None = None,
                    name: str | None = None, combine: bool = True) -> DiscoverPlan:
    """The candidates for data config `data` (`{"dataset": "digits", "rotate": 90, ...}`, as `invlab train` takes),
    as a validated sweep: `none` plus every applicable registered augmentation (`orbits`: only those named), each
    trained for `steps` steps over `seeds` (a count or a list). `model_config` / `train` override the shared
    invariant-GP and training settings (the same for every candidate); `combine` leaves room for stage 2 (see
    `run_candidates`). No applicable candidate is a ConfigError naming the registered ones and why none applies."""
    if not isinstance(data, dict) or not data.get("dataset"):
        raise ConfigError("discover needs a data set: give --dataset NAME (e.g. digits, symmetric-2d, csv:PATH)")
    kind, shape, columns = _inputs(data)
    found, skipped = applicable(kind, shape, orbits)
    if not found:
        why = "; ".join(f"{n}: {r}" for n, r in skipped.items()) or "none is registered"
        raise ConfigError(f"no candidate invariance applies to {data['dataset']} ({kind} inputs of shape {shape}): "
                          f"{why}. Name a group on a few coordinates (--orbit permutations:0,1), register an orbit "
                          "for such inputs (invlab.transforms.register) or use other data")
    if {"augmentation", "orbit_coordinates", "then_augmentation"} & set(model_config or {}):
        raise ConfigError("discover chooses the augmentation itself; leave --augmentation out (use --orbit NAME to "
                          "restrict the candidates)")
    candidates = [Candidate(NONE, BASELINE)] + found
    model = {**DEFAULT_MODEL, **(model_config or {})}
    settings = {**DEFAULT_TRAIN, **(train or {}), "steps": int(steps)}
    settings.pop("seed", None)
    base = RunConfig("invariant", copy.deepcopy(data), model, settings)
    vary = {"model.augmentation": [c.augmentation for c in candidates]}
    if any(c.coordinates for c in candidates):
        vary["model.orbit_coordinates"] = [c.coordinates or None for c in candidates]
    if combine:  # stage 2 appends its combination here, so the single candidates' run keys stay as they are
        vary["model.then_augmentation"] = [None] * len(candidates)
    spec = SweepSpec(name=name or f"{SWEEP_PREFIX}{data['dataset']}", base=base, vary=vary, mode="list", seeds=seeds)
    spec.validate()
    return DiscoverPlan(dict(data), kind, shape, candidates, skipped, spec, columns)


def check_runner(scheduler: str | None = None, serial: bool = False) -> None:
    """Refuse, before anything is stored, a study that cannot train where it is asked to: on Dask (not `serial`)
    where Dask distributed is not installed (a ConfigError saying that `--serial` trains without it), or at a
    `scheduler` address that does not answer as Dask (`check_scheduler`)."""
    if serial:
        return
    try:
        require_dask()
    except ConfigError:
        instead = "leave --scheduler out and add --serial" if scheduler else "add --serial"
        raise ConfigError("discover trains its candidates on Dask distributed, which is not installed: "
                          f"{instead} to train them one after another in this process (no Dask needed), or install "
                          "Dask with: pip install 'invariance-lab[sweeps]'") from None
    check_scheduler(scheduler)


def create_sweep(plan: DiscoverPlan, store) -> int:
    """Store the plan's sweep (nothing run yet) and return its id, so that a caller knows it before any run ends."""
    return store.sweeps.create(plan.spec.name, plan.spec.to_json(), len(plan.spec.runs()))


def run_candidates(plan: DiscoverPlan, store=None, *, sweep_id: int | None = None, scheduler: str | None = None,
                   n_workers: int | None = None, serial: bool = False, on_result=None, progress=None,
                   stop: threading.Event | None = None, threads: int = 1) -> int:
    """Train every candidate of `plan` over its seeds as one stored sweep (`sweep_id`: the one `create_sweep` stored
    for it; default: a new one); returns the sweep's id.

    Stage 2 (when the plan leaves room for it, `plan_candidates(combine=True)`): the two best single candidates that
    each beat none beyond noise are combined (the first, then the second: `rotation+flips`) and trained over the same
    seeds with the same budget, in the same sweep; the report keeps the combination only where it beats its first
    part beyond the seeds' spread. The engine composes two augmentations, so a combination has two parts at most.

    On Dask (a LocalCluster of `n_workers`, started once for both stages, or `scheduler`'s cluster), or one run after
    another in this process with `serial=True`. `on_result(candidate, seed, run_id, status, message)` is called from
    this thread as each run is stored ('finished' or 'failed'; a failed run's message says why, and the others go
    on); `progress` receives the sweep's `SweepProgress` (Dask only); `stop` ends it early, keeping what finished
    (the report is then partial). Ctrl-C (KeyboardInterrupt) does the same and propagates."""
    from ..train import RunStore

    if sweep_id is None:
        check_runner(scheduler, serial)  # before the store or the sweep is created
    store = store if store is not None else RunStore()
    if sweep_id is None:
        sweep_id = create_sweep(plan, store)
    cluster = None
    try:
        if not serial and not scheduler and "model.then_augmentation" in plan.spec.vary:
            from .clusters import local_cluster
            from .scheduler import require_dask

            require_dask()
            cluster = local_cluster(n_workers)  # one cluster for both stages
            scheduler = cluster.scheduler_address
        stage = _Stage(store, sweep_id, serial, scheduler, n_workers, on_result, progress, stop, threads)
        stage.run(plan.spec)
        if "model.then_augmentation" in plan.spec.vary and not (stop is not None and stop.is_set()):
            pair = next_combination(store, sweep_id)
            if pair is not None:
                plan.spec = with_combination(plan.spec, *pair)
                plan.candidates.append(Candidate(COMBINED.join(pair), pair[0]))
                store.sweeps.update(sweep_id, spec=plan.spec.to_json(), total=len(plan.spec.runs()))
                stage.run(plan.spec)
    finally:
        if cluster is not None:
            cluster.close()
    return sweep_id


@dataclass
class _Stage:
    """Runs a (grown) discover spec's missing runs into its sweep, serially or on Dask, telling each stored run."""

    store: object
    sweep_id: int
    serial: bool
    scheduler: str | None
    n_workers: int | None
    on_result: object
    progress: object
    stop: object
    threads: int

    def run(self, spec: SweepSpec) -> None:
        """Train the runs of `spec` that the sweep does not hold yet."""
        runs = {run.key: run for run in spec.runs()}

        def tell(key, run_id, status, message):
            if self.on_result is not None and key in runs:
                run = runs[key]
                self.on_result(point_name(run.point), run.seed, run_id, status, message)

        if self.serial:
            _run_serially(spec, self.store, self.sweep_id, runs, tell, self.stop, self.threads)
            return
        from .execute import run_sweep

        def relay(p):
            event = p.event
            if event is not None and event.kind == SweepEventKind.STORED:
                tell(event.key, event.run_id, event.status, event.message)
            if self.progress is not None:
                self.progress(p)

        run_sweep(None, store=self.store, sweep_id=self.sweep_id, scheduler=self.scheduler, n_workers=self.n_workers,
                  progress=relay, stop=self.stop, threads=self.threads, rerun_failed=False)


def _run_serially(spec: SweepSpec, store, sweep_id: int, runs: dict, tell, stop, threads: int) -> None:
    """The runs the sweep does not hold yet, in this process, one after another, each stored as it finishes."""
    from .execute import store_result
    from .task import train_run

    held = {r.sweep_key for r in store.sweeps.runs(sweep_id)}
    seeds = {seed: i for i, seed in enumerate(spec.seeds)}
    todo = sorted((run for run in runs.values() if run.key not in held), key=lambda run: seeds.get(run.seed, 0))
    status = SweepStatus.INTERRUPTED
    lease = store.leases.claim_sweep(sweep_id)  # one writer: a second process running this sweep is refused
    try:
        for run in todo:
            if stop is not None and stop.is_set():
                break
            # the heartbeat: a reader on another host sees this process runs it
            store.leases.claim_sweep(sweep_id, lease)
            try:
                result = train_run(run.config.to_json(), run.key, None, threads=threads)
            except (RuntimeError, ValueError, ArithmeticError) as err:  # numerical trouble beyond the trainer's own
                result = {"status": RunStatus.FAILED, "message": f"{type(err).__name__}: {err}", "step": 0}
            run_id, _ = store_result(store, sweep_id, run, result)
            tell(run.key, run_id, result["status"], result.get("message"))
        else:
            stored = store.sweeps.runs(sweep_id)
            status = (SweepStatus.FINISHED if all(r.status == RunStatus.FINISHED for r in stored)
                      else SweepStatus.INCOMPLETE)
    finally:
        store.sweeps.update(sweep_id, status=status)


__all__ = ["Candidate", "DiscoverPlan", "NONE", "BASELINE", "COMBINED", "applicable", "candidate_name",
           "check_runner", "check_scheduler", "create_sweep", "parse_orbit", "plan_candidates", "point_name",
           "run_candidates"]
