"""A run's step budget changed on the page while it trains reaches the running trainer (through its queue of live
edits): the run ends at the new count and says it finished."""
from invlab.dashboard import Explorer
from invlab.train import RunConfig


def test_a_step_budget_lowered_while_training_ends_the_run_there(wait_until):
    e = Explorer(RunConfig(data={"dataset": "digits", "subset": 200, "test_subset": 100},
                           model_config={"num_inducing": 10},
                           train={"steps": 100_000, "eval_every": 0, "log_every": 1, "batch_size": 64}))
    e.__panel__()
    try:
        e.start()
        wait_until(lambda: e.session.step >= 2 and e.session.state == "running", e)
        budget = e.session.step + 6
        e.train.steps = budget  # what the page's steps field does
        wait_until(lambda: e.session.state == "finished", e, timeout=60)
        assert e.session.step == budget and e.session.trainer.step_count == budget
    finally:
        e.close()
