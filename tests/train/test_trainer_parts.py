"""The parts a `Trainer` holds, each against an independent computation: the order it visits its training points in
(`EpochOrder`), its run's schedule of heartbeats and checkpoints and their pruning in the store (`StoredRun`), the
last good state it falls back on (`LastGoodState`), when an L-BFGS solve is done, the learning-rate schedule, its
step rate (`StepRate`), what it reports (`TrainerReport`) and a checkpoint's contents (`training_state`)."""
import math

import numpy as np
import pytest
import torch

from invlab.train import RunConfig, RunStore, TrainConfig, Trainer
from invlab.train.batches import EpochOrder
from invlab.train.checkpoint import load_checkpoint, save_checkpoint
from invlab.train.evaluation import StepRate, TrainerReport
from invlab.train.optimisers import lbfgs_counters, lbfgs_solve_converged, lbfgs_step, make_optimizer
from invlab.train.persistence import StoredRun, load_training_state, training_state
from invlab.train.recovery import LastGoodState, all_finite
from invlab.train.store import HEARTBEAT_SECONDS


def test_an_epoch_visits_every_point_once_in_the_generators_permutation():
    order = EpochOrder(10, 3, torch.Generator().manual_seed(7))
    batches = [order.next() for _ in range(6)]  # three batches an epoch: the tenth point waits for the next one
    first, second = (torch.randperm(10, generator=g) for g in [torch.Generator().manual_seed(7)] * 2)
    assert torch.equal(torch.cat(batches[:3]), first[:9]) and torch.equal(torch.cat(batches[3:]), second[:9])
    assert len(set(torch.cat(batches[:3]).tolist())) == 9
    assert EpochOrder(10, 0, torch.Generator()).whole and EpochOrder(10, 10, torch.Generator()).whole
    assert not order.whole


def test_an_order_continued_from_its_state_takes_the_same_batches_as_one_never_stopped():
    straight = EpochOrder(11, 4, torch.Generator().manual_seed(3))
    expected = [straight.next() for _ in range(7)]
    generator = torch.Generator().manual_seed(3)
    first = EpochOrder(11, 4, generator)
    taken = [first.next() for _ in range(4)]  # mid-epoch: one batch of the second epoch used
    state, rng = first.state(), generator.get_state()
    generator2 = torch.Generator()
    generator2.set_state(rng)
    again = EpochOrder(11, 4, generator2)
    again.load(state["order"], state["cursor"])
    taken += [again.next() for _ in range(3)]
    assert all(torch.equal(a, b) for a, b in zip(taken, expected))


def test_a_run_without_a_store_is_kept_nowhere():
    record = StoredRun(None, None, config_json="{}", model="svgp", data_name="digits")
    record.claim()
    record.release("paused")
    assert record.run_id is None and record.lease is None and not record.created
    assert record.due(50, TrainConfig(), now=1e9) is None and not record.abandon("gone")


def test_heartbeats_and_checkpoints_fall_due_by_steps_and_by_time(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        record = StoredRun(store, None, config_json="{}", model="svgp", data_name="digits")
        assert record.created and store.runs.get(record.run_id).model == "svgp"
        tc = TrainConfig(checkpoint_every=0, checkpoint_seconds=600.0, flush_every=50)
        record.start(tc, now=100.0)
        assert record.due(1, tc, now=100.0) is None
        assert record.due(50, tc, now=101.0) == "beat"  # every flush_every steps
        assert record.due(51, tc, now=100.0 + HEARTBEAT_SECONDS) == "beat"  # or after a heartbeat's silence
        assert record.due(52, tc, now=700.0) == "checkpoint"  # checkpoint_seconds after the start
        assert record.due(7, TrainConfig(checkpoint_every=7, checkpoint_seconds=0.0), now=100.0) == "checkpoint"
        # a checkpoint that took 20 s to write spaces the next one so that writing takes at most 2 % of the time
        path = record.checkpoint_path(52)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
        record.checkpoint_written(52, path, -12.5, tc, began=700.0, now=720.0)
        assert record.next_checkpoint == pytest.approx(720.0 + 20.0 / 0.02)
        assert record.last_beat == 720.0 and store.runs.get(record.run_id).step == 52
    finally:
        store.close()


def test_only_the_newest_checkpoints_are_kept(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        record = StoredRun(store, None, config_json="{}", model="svgp", data_name="digits")
        tc = TrainConfig(keep_checkpoints=2, checkpoint_seconds=0.0)
        paths = []
        for step in (10, 20, 30, 40):
            path = record.checkpoint_path(step)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x")
            paths.append(path)
            record.checkpoint_written(step, path, None, tc, began=0.0, now=0.0)
        assert sorted(s for s, _ in store.checkpoints.list(record.run_id)) == [30, 40]
        assert [p.exists() for p in paths] == [False, False, True, True]
    finally:
        store.close()


def test_the_last_good_state_puts_back_the_model_and_the_optimiser():
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    good = LastGoodState(model, optimizer, step=1)
    kept = {k: v.clone() for k, v in model.state_dict().items()}
    moments = optimizer.state_dict()["state"][0]["exp_avg"].clone()
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.ones(1, 3)).sum().backward()
        optimizer.step()
    with torch.no_grad():
        model.weight.fill_(float("nan"))
    assert not all_finite(None, model.parameters(), with_grads=False)
    assert good.restore() == 1
    assert all(torch.equal(v, kept[k]) for k, v in model.state_dict().items())
    assert torch.equal(optimizer.state_dict()["state"][0]["exp_avg"], moments)
    assert all_finite(torch.tensor(1.0), model.parameters(), with_grads=True)
    assert not all_finite(torch.tensor(float("inf")), model.parameters(), with_grads=False)


def test_an_lbfgs_solve_is_done_when_torch_stops_its_inner_loop_early():
    # a convex quadratic: the first step solves it and torch stops on its gradient tolerance
    x = torch.tensor([3.0, -2.0], dtype=torch.float64, requires_grad=True)
    optimizer = make_optimizer("lbfgs", [x], lr=1.0)
    A = torch.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=torch.float64)

    def quadratic():
        optimizer.zero_grad()
        loss = 0.5 * x @ A @ x
        loss.backward()
        return loss

    before = (0, 0, None)
    loss = float(optimizer.step(quadratic))
    counters = lbfgs_counters(optimizer)
    assert counters["n_iter"] < 20 and lbfgs_solve_converged(optimizer, before, loss)
    # Rosenbrock's valley from far away: 20 inner iterations are not enough, and the solve goes on
    y = torch.tensor([-1.5, 2.5], dtype=torch.float64, requires_grad=True)
    optimizer = make_optimizer("lbfgs", [y], lr=1.0)

    def rosenbrock():
        optimizer.zero_grad()
        loss = (1 - y[0]) ** 2 + 100 * (y[1] - y[0] ** 2) ** 2
        loss.backward()
        return loss

    loss = float(optimizer.step(rosenbrock))
    counters = lbfgs_counters(optimizer)
    assert counters["n_iter"] == 20 or counters["func_evals"] >= 25  # it used up its iterations or evaluations
    assert not lbfgs_solve_converged(optimizer, before, loss) and loss > 1e-6
    assert lbfgs_solve_converged(optimizer, (0, 0, loss), loss)  # counted as done when the loss did not move
    assert isinstance(make_optimizer("adam", [y], lr=0.01), torch.optim.Adam)


@pytest.mark.parametrize("schedule", ["constant", "cosine", "exponential"])
def test_the_learning_rate_schedule_is_its_closed_form(schedule):
    tc = TrainConfig(steps=200, schedule=schedule, final_lr_ratio=0.05)
    t = np.minimum(np.arange(0, 260, 13) / 200, 1.0)
    expected = {"constant": np.ones_like(t), "cosine": 0.05 + 0.95 * 0.5 * (1 + np.cos(math.pi * t)),
                "exponential": 0.05 ** t}[schedule]
    np.testing.assert_allclose([tc.lr_factor(s) for s in range(0, 260, 13)], expected, rtol=1e-12)


def test_an_lbfgs_step_returns_its_last_terms_and_whether_the_solve_is_done():
    x = torch.tensor([3.0, -2.0], dtype=torch.float64, requires_grad=True)
    optimizer = make_optimizer("lbfgs", [x], lr=1.0)
    A = torch.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=torch.float64)
    evaluated = []

    class Terms:
        def __init__(self, loss):
            self.loss = loss

    def closure():
        optimizer.zero_grad()
        terms = Terms(0.5 * x @ A @ x)
        terms.loss.backward()
        evaluated.append(terms)
        return terms

    terms, done = lbfgs_step(optimizer, closure, None)
    assert terms is evaluated[-1] and done  # torch stopped on its tolerance: the quadratic is solved
    assert float(terms.loss) < 1e-8 and torch.allclose(x.detach(), torch.zeros(2, dtype=torch.float64), atol=1e-4)
    assert float(terms.loss) == pytest.approx(float(0.5 * x.detach() @ A @ x.detach()), rel=1e-9)  # at the end point


def test_the_step_rate_is_steps_over_seconds_between_ticks(monkeypatch):
    clock = iter([10.0, 12.0, 12.0, 13.0])
    monkeypatch.setattr("invlab.train.evaluation.time.perf_counter", lambda: next(clock))
    rate = StepRate()  # starts at 10 s
    assert math.isnan(rate.steps_per_sec)
    rate.tick(50)  # 50 steps in 2 s
    assert rate.steps_per_sec == 25.0
    rate.tick(50)  # no step since: the rate stays
    assert rate.steps_per_sec == 25.0
    rate.tick(60)  # 10 steps in 1 s
    assert rate.steps_per_sec == 10.0


def _small_trainer():
    config = RunConfig(model="svgp", data={"dataset": "two_moons", "subset": 60, "test_subset": 30},
                       model_config={"num_inducing": 8}, train={"steps": 20, "eval_every": 5, "batch_size": 16})
    return Trainer(config)


def test_the_report_keeps_the_history_the_trainer_shows_and_scores_on_its_subset():
    trainer = _small_trainer()
    assert isinstance(trainer.report, TrainerReport) and type(trainer).__mro__ == (Trainer, object)
    snaps = list(trainer.run(10, every=5))
    assert trainer.history is trainer.report.history and [s.step for s in snaps] == [5, 10]
    steps, values = trainer.history["test_error"]
    assert steps == [5, 10] and values[-1] == trainer.report.last_metrics["test_error"]
    # the same model scored again on the same subset, with the same seeded sampling, gives the same figures
    again = trainer.evaluation.score(trainer.model)
    assert again == pytest.approx(trainer.report.last_metrics, rel=1e-12)
    # a snapshot's history is a copy of the report's
    snap = trainer.report.snapshot(views=False)
    np.testing.assert_array_equal(snap.history["loss"][1], np.asarray(trainer.history["loss"][1]))
    assert snap.numerics is trainer.report.last_numerics and trainer.rate.steps_per_sec > 0


def test_a_checkpoints_state_put_into_a_fresh_trainer_takes_the_same_next_steps(tmp_path):
    trainer = _small_trainer()
    list(trainer.run(7, every=7))
    payload = load_checkpoint(save_checkpoint(tmp_path / "state.pt", **training_state(trainer)))
    other = _small_trainer()
    load_training_state(other, payload)
    assert other.step_count == 7 and other.edits.current_lr == trainer.edits.current_lr
    for _ in range(3):
        assert other.step().loss == pytest.approx(trainer.step().loss, rel=1e-12)
