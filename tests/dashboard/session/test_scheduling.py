"""Pages share the server fairly: a single step on a paused page needs no run slot, steps are taken in turns handed
out first come first served, and the server's limits (pages training at once, steps/s each) follow its cores and its
flags."""
import threading
import time

from invlab.cli.serve import serve_command
from invlab.dashboard.session.scheduling import FairTurns, ServerPace, TrainingSlots
from invlab.dashboard.session.training import TrainingSession
from invlab.train import RunConfig


def small(steps=100_000):
    return RunConfig(data={"dataset": "digits", "subset": 200, "test_subset": 100}, model_config={"num_inducing": 15},
                     train={"steps": steps, "eval_every": 0, "log_every": 5, "batch_size": 64})


def wait_for(condition, what, timeout=120.0):
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_single_step_on_a_paused_page_is_taken_while_another_page_holds_the_only_slot():
    slots = TrainingSlots(1)
    a = TrainingSession(small(), slots=slots)
    b = TrainingSession(small(), slots=slots)
    try:
        a.commands.start()
        wait_for(lambda: a.state == "running" and a.step >= 2, "the first page to train")
        states = []
        b.param.watch(lambda e: states.append(e.new), "state")
        b.commands.step_once()
        wait_for(lambda: b.step == 1 and b.state == "paused", "the paused page's single step")
        assert a.state == "running"  # the other page kept its slot and went on training meanwhile
        assert "queued" not in states and "waiting for a training slot" not in b.message
        b.commands.step_once()
        wait_for(lambda: b.step == 2, "a second single step")
        assert a.state == "running"
    finally:
        a.stop(), b.stop()


def test_turns_are_handed_out_first_come_first_served():
    turns = FairTurns(1)
    order = []
    turns.acquire()  # a training thread in its step
    waiting = threading.Thread(target=lambda: (turns.acquire(), order.append("waiting page"), turns.release()))
    waiting.start()
    wait_for(lambda: turns.waiting == 1, "the second thread to queue")
    turns.release()  # the training thread's step ends ...
    turns.acquire()  # ... and it asks again at once: it goes behind the page already waiting
    order.append("training page")
    turns.release()
    waiting.join(10)
    assert order == ["waiting page", "training page"]


def test_pace_waits_for_the_steps_per_second_cap_and_pause_cuts_it_short():
    slots = TrainingSlots(1, max_steps_per_s=0.001)  # one step every 1000 s
    stop = threading.Event()
    stop.set()
    start = time.perf_counter()
    slots.pace(time.perf_counter(), stop)  # Pause pressed: no wait
    assert time.perf_counter() - start < 100  # far below the 1000 s the cap would ask for
    TrainingSlots(1).pace(time.perf_counter())  # no cap: returns at once


def test_a_session_no_page_shows_takes_no_step_until_one_does_and_a_stop_ends_the_wait():
    """A closed tab (the page's tick clears `watched`) holds its training thread at the next step; a page showing it
    again (a reload) lets it go on from the step it was at; stopping the session ends the wait."""
    session = TrainingSession(small(), slots=TrainingSlots(1))
    try:
        session.commands.start()
        wait_for(lambda: session.state == "running" and session.steps_done >= 3, "the page to train")
        session.watched.clear()
        time.sleep(0.3)  # the step in progress ends
        held = session.steps_done
        time.sleep(1.0)
        assert session.steps_done == held and session.state == "running"  # held, not paused or ended
        session.watched.set()
        wait_for(lambda: session.steps_done >= held + 3, "training to go on once a page shows it again")
        session.watched.clear()
        time.sleep(0.3)
        session.commands.pause()
        wait_for(lambda: session.state == "paused", "Pause to end the held run")
    finally:
        session.stop()
    assert not session.thread.is_alive()


def test_server_limits_have_defaults_for_a_laptop_and_a_class_server_and_follow_the_flags():
    laptop, server = ServerPace.for_cores(2), ServerPace.for_cores(16)
    assert laptop.max_training == 2 and server.max_training == 12
    assert laptop.max_steps_per_s == 0 and server.max_steps_per_s == 0  # no cap: the page at the machine's speed
    pace = ServerPace.from_env({"INVLAB_MAX_TRAINING": "3", "INVLAB_MAX_STEPS_PER_S": "7.5"})
    assert (pace.max_training, pace.max_steps_per_s) == (3, 7.5)
    assert ServerPace.from_env({"INVLAB_MAX_STEPS_PER_S": "0"}).max_steps_per_s == 0  # no cap
    _, env = serve_command(["--max-training", "2", "--max-steps-per-s", "12"])
    assert env["INVLAB_MAX_TRAINING"] == "2" and env["INVLAB_MAX_STEPS_PER_S"] == "12"


def test_a_class_server_caps_each_page_unless_told_otherwise():
    """With logins (a class) `invlab serve` caps each page at CLASS_STEPS_PER_S; without, no cap; a flag wins."""
    from invlab.cli.serve import CLASS_STEPS_PER_S

    _, env = serve_command([])
    assert "INVLAB_MAX_STEPS_PER_S" not in env
    _, env = serve_command(["--basic-auth", "users.json", "--cookie-secret", "x" * 32])
    assert float(env["INVLAB_MAX_STEPS_PER_S"]) == CLASS_STEPS_PER_S > 0
    _, env = serve_command(["--basic-auth", "users.json", "--max-steps-per-s", "0"])
    assert env["INVLAB_MAX_STEPS_PER_S"] == "0"


def test_threads_follow_the_pages_training():
    """A page training alone gets every core (a 2-core laptop) or all but the server's; pages training together
    share them; INVLAB_TORCH_THREADS fixes the number."""
    laptop, workstation = TrainingSlots(2, cores=2), TrainingSlots(12, cores=16)
    assert laptop.threads({}) == 2 and workstation.threads({}) == 15
    for slots in (laptop, workstation):
        generation = slots.generation
        assert slots.acquire(0) and slots.acquire(0)
        assert slots.generation == generation + 2
    assert laptop.threads({}) == 1 and workstation.threads({}) == 7
    assert workstation.acquire(0) and workstation.threads({}) == 5
    laptop.release()
    assert laptop.threads({}) == 2 and laptop.threads({"INVLAB_TORCH_THREADS": "1"}) == 1


def test_a_training_page_rebalances_its_threads_when_another_starts_or_stops(monkeypatch):
    """Two sessions on one 2-core server: the first steps on 2 torch threads alone, both on 1 while the second trains,
    and the first goes back to 2 once the second pauses (read in each training thread at each step)."""
    import torch

    import invlab.dashboard.session.training

    monkeypatch.delenv("INVLAB_TORCH_THREADS", raising=False)
    seen: dict[int, list[int]] = {}  # training thread id → torch threads at each step

    class Watched(invlab.dashboard.session.training.Trainer):
        def _step(self):
            seen.setdefault(threading.get_ident(), []).append(torch.get_num_threads())
            return super()._step()

    monkeypatch.setattr(invlab.dashboard.session.training, "Trainer", Watched)
    slots = TrainingSlots(2, cores=2)
    a, b = TrainingSession(small(), slots=slots), TrainingSession(small(), slots=slots)

    def last(session):
        return seen.get(session.thread.ident, [None])[-1]

    try:
        a.commands.start()
        wait_for(lambda: a.state == "running" and last(a) == 2, "the first page to train on both cores")
        b.commands.start()
        wait_for(lambda: b.state == "running" and last(b) == 1, "the second page to train on one core")
        wait_for(lambda: last(a) == 1, "the first page to give a core up")
        b.commands.pause()
        wait_for(lambda: b.state == "paused", "the second page to pause")
        wait_for(lambda: last(a) == 2, "the first page to take both cores again")
    finally:
        a.stop(wait=True)
        b.stop(wait=True)


def nice_of(native_id: int) -> int:
    import os

    return os.getpriority(os.PRIO_PROCESS, native_id)


PRIORITY_CHECK = """
import os, threading, time, torch
from invlab.dashboard.session.scheduling import TrainingSlots
from invlab.dashboard.session.training import TrainingSession
from invlab.train import RunConfig
nice = lambda tid: os.getpriority(os.PRIO_PROCESS, tid)
server = nice(threading.get_native_id())
config = RunConfig(data={"dataset": "digits", "subset": 200, "test_subset": 100}, model_config={"num_inducing": 15},
                   train={"steps": 100000, "eval_every": 0, "log_every": 5, "batch_size": 64})
before = {int(t) for t in os.listdir("/proc/self/task")}
session = TrainingSession(config, slots=TrainingSlots(1, cores=2))
session.commands.start()
deadline = time.time() + 120
while not (session.state == "running" and session.step >= 3) and time.time() < deadline:
    time.sleep(0.05)
started = {int(t) for t in os.listdir("/proc/self/task")} - before  # the training thread and what it started
print(session.step, server, nice(threading.get_native_id()), nice(session.thread.native_id),
      torch.__config__.parallel_info().count("OpenMP"), *sorted(nice(t) for t in started))
session.stop(wait=True)
"""


def test_a_nicer_training_thread_asked_for_carries_its_priority_to_its_torch_workers():
    """With INVLAB_TRAINING_NICE=3 the training thread runs 3 steps nicer than the server thread, and so do the
    intra-op threads torch starts from it (two torch threads here), while the server thread keeps its own. In a
    process of its own, so that no other test's threads are counted."""
    import os
    import subprocess
    import sys

    import pytest

    if os.uname().sysname != "Linux":
        pytest.skip("threads have their own scheduling priority on Linux")
    env = {**os.environ, "INVLAB_TORCH_THREADS": "2", "INVLAB_MAX_STEPS_PER_S": "0", "INVLAB_TRAINING_NICE": "3"}
    out = subprocess.run([sys.executable, "-c", PRIORITY_CHECK], capture_output=True, text=True, check=True,
                         env=env, cwd=os.getcwd(), timeout=300).stdout.split()
    step, server, server_after, trainer, openmp, *started = (int(x) for x in out)
    assert step >= 3
    assert trainer == min(server + 3, 19) and server_after == server  # the server thread keeps its own
    niced = [n for n in started if n == trainer]
    assert len(niced) >= (2 if openmp else 1), started  # with OpenMP, its worker inherited the training thread's


FAIR_SHARE_CHECK = """
import os, subprocess, sys, time
from invlab.dashboard.session.scheduling import TrainingSlots
from invlab.dashboard.session.training import TrainingSession
from invlab.train import RunConfig
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, which the busy process below shares
busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # another program at the default priority
config = RunConfig(data={"dataset": "digits", "subset": 200, "test_subset": 100}, model_config={"num_inducing": 15},
                   train={"steps": 10**7, "eval_every": 0, "log_every": 5, "batch_size": 64})
session = TrainingSession(config, slots=TrainingSlots(1, cores=1))
session.commands.start()
try:
    deadline = time.time() + 120
    while not (session.state == "running" and session.step >= 3) and time.time() < deadline:
        time.sleep(0.05)
    busy_cpu = lambda: sum(int(x) for x in open(f"/proc/{busy.pid}/stat").read().rsplit(")", 1)[1].split()[11:13])
    ours_0, busy_0 = sum(os.times()[:2]), busy_cpu() / os.sysconf("SC_CLK_TCK")
    time.sleep(3.0)
    ours_1, busy_1 = sum(os.times()[:2]), busy_cpu() / os.sysconf("SC_CLK_TCK")
    print(session.step, ours_1 - ours_0, busy_1 - busy_0)
finally:
    busy.kill()
    session.stop(wait=True)
"""


def test_a_page_trains_on_its_fair_share_of_a_core_another_program_keeps_busy():
    """On a machine other programs keep busy (a build, another notebook, a second test run), a page's training
    takes its fair share of a core, as the engine alone would: sharing one core with a busy loop at the default
    priority, the training process gets about as much CPU as the loop (a training thread niced by 10 got a tenth of
    it: 110 against 1024 in Linux's CPU weights, and the page barely moved)."""
    import os
    import subprocess
    import sys

    import pytest

    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("needs Linux's CPU affinity")
    env = {k: v for k, v in os.environ.items() if k != "INVLAB_TRAINING_NICE"}
    env.update(INVLAB_TORCH_THREADS="1", INVLAB_MAX_STEPS_PER_S="0")
    out = subprocess.run([sys.executable, "-c", FAIR_SHARE_CHECK], capture_output=True, text=True, check=True,
                         env=env, cwd=os.getcwd(), timeout=300).stdout.split()
    step, ours, busy = int(out[0]), float(out[1]), float(out[2])
    assert step >= 3
    assert ours > 0.5 * busy, f"the training process got {ours:.2f} CPU-s against the busy loop's {busy:.2f}"


def test_the_training_priority_can_be_set_or_turned_off():
    from invlab.dashboard.session.scheduling import lower_training_priority

    results = {}

    def run(name, env):
        base = nice_of(threading.get_native_id())
        results[name] = lower_training_priority(env) - base

    for name, env in (("default", {}), ("off", {"INVLAB_TRAINING_NICE": "0"}),
                      ("three", {"INVLAB_TRAINING_NICE": "3"})):
        thread = threading.Thread(target=run, args=(name, env))
        thread.start()
        thread.join()
    base = nice_of(threading.get_native_id())
    assert results["off"] == 0 and results["three"] == min(3, 19 - base)
    assert results["default"] == 0  # the server's own priority: a page keeps its share of a busy machine


def test_short_gil_turns_last_only_while_a_page_trains():
    """The interpreter hands the GIL over every SWITCH_INTERVAL while a session trains, and goes back to its own
    interval once none does (a notebook kernel whose run finished keeps Python's default)."""
    import sys

    from invlab.dashboard.session.scheduling import SWITCH_INTERVAL

    own = sys.getswitchinterval()
    assert own > SWITCH_INTERVAL
    seen = []
    session = TrainingSession(small(), slots=TrainingSlots(1))
    session.param.watch(lambda e: seen.append(sys.getswitchinterval()) if e.new == "running" else None, "state")
    try:
        session.commands.start()
        wait_for(lambda: session.state == "running" and session.step >= 2, "the page to train")
        assert sys.getswitchinterval() == SWITCH_INTERVAL and seen[0] == SWITCH_INTERVAL
        session.commands.pause()
        wait_for(lambda: session.state == "paused", "the page to pause")
        wait_for(lambda: sys.getswitchinterval() == own, "the interpreter's own interval", timeout=10)
    finally:
        session.stop(wait=True)
    assert sys.getswitchinterval() == own


SERVER_THREAD_CHECK = """
import os, threading, time, torch
from invlab.dashboard.session.scheduling import server_thread_on_one_core

def threads():
    return len(os.listdir("/proc/self/task"))

server_thread_on_one_core()
before = threads()
trainer = threading.Thread(target=lambda: (torch.set_num_threads(2), torch.ones(512, 512) @ torch.ones(512, 512)))
trainer.start(); trainer.join()  # a page's training thread took two threads (torch's process-wide count with it)
deadline = time.time() + 30
while threads() > before and time.time() < deadline:  # its OpenMP workers end with it
    time.sleep(0.05)
x = torch.randn(2_000_000)
for _ in range(20):
    x = (x * 1.0001).sin()  # element-wise work big enough for torch to run it in parallel when it may
print(torch.get_num_threads(), threads() - before)
"""


def test_the_server_thread_keeps_one_torch_thread_whatever_a_training_thread_set():
    """The served app's own torch work (the prior page's redraws, building a page) runs on one core: it never
    starts a pool of OpenMP workers that lives beside the pages' training threads for the server's lifetime, even
    when a training thread set torch's thread count first."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "INVLAB_TORCH_THREADS")}
    out = subprocess.run([sys.executable, "-c", SERVER_THREAD_CHECK], capture_output=True, text=True, check=True,
                         env=env, cwd=os.getcwd(), timeout=300).stdout.split()
    threads, new_workers = (int(x) for x in out)
    assert threads == 1 and new_workers == 0, out
