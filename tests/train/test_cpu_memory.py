"""Freed CPU tensors are reused instead of being page-faulted in again every training step (glibc only)."""
import os
import platform
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                reason="the setting applies to glibc's allocator only")

# A step-like loop: a 48 MB tensor (above glibc's largest adaptive mmap threshold) made, written and freed,
# with small allocations in between. Prints whether the setting is in force and in how many of the last 10 of 30
# iterations the tensor was faulted in again (more than half its pages). A count, not a sum of faults, so that one
# refault on a busy machine (the kernel placing the heap elsewhere once) does not decide the test.
LOOP = textwrap.dedent("""
    import resource, sys, torch
    from invlab.settings import keep_freed_cpu_memory
    kept = keep_freed_cpu_memory() if sys.argv[1] == "keep" else False
    t_pages = 48_000_000 // resource.getpagesize()
    faults = []
    for i in range(30):
        t = torch.empty(6_000_000, dtype=torch.float64)
        small = [torch.ones(100) for _ in range(10)]
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t.fill_(1.0)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        del t
    print(kept, sum(f > t_pages // 2 for f in faults[-10:]))
""")


def run_loop(mode: str, **env) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", LOOP, mode], capture_output=True, text=True, check=True,
                         env={**os.environ, **env}, cwd=os.getcwd()).stdout.split()
    return out[0], int(out[1])


def test_freed_tensors_are_reused_instead_of_faulted_in_again():
    kept, faults_kept = run_loop("keep")
    _, faults_default = run_loop("default")
    assert kept == "True"
    assert faults_default >= 8  # glibc's default: the 48 MB come back from the OS, zeroed, (nearly) every time
    assert faults_kept <= 1  # kept: the same memory is written again without faults


@pytest.fixture
def fresh_settings(monkeypatch):
    """`invlab.settings` as a new process has it (neither setting tried yet), restored afterwards."""
    from invlab import settings

    monkeypatch.setitem(settings._malloc_state, "kept", None)
    for name in ("INVLAB_KEEP_FREED_CPU_MEMORY", "GLIBC_TUNABLES", "MALLOC_ARENA_MAX",
                 *settings._GLIBC_MALLOC_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    return settings


@pytest.mark.parametrize("variable, value", [("INVLAB_KEEP_FREED_CPU_MEMORY", "0"),
                                             ("MALLOC_TRIM_THRESHOLD_", "262144"),
                                             ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=262144")])
def test_the_setting_can_be_turned_off_and_respects_a_tuned_allocator(fresh_settings, monkeypatch, variable, value):
    """Refused from the environment alone, before the allocator is touched: checked in this process."""
    monkeypatch.setenv(variable, value)
    monkeypatch.setattr(fresh_settings.ctypes, "CDLL", lambda *a: pytest.fail("the allocator was changed"))
    assert fresh_settings.keep_freed_cpu_memory() is False
    assert fresh_settings._malloc_state["kept"] is False


def test_a_cpu_trainer_turns_it_on(fresh_settings):
    from invlab.train import RunConfig, Trainer

    Trainer(RunConfig(model="svgp", data={"dataset": "two-moons"}, train={"device": "cpu"}))
    assert fresh_settings._malloc_state["kept"] is True


def _loop_on_worker() -> tuple[bool, int, str | None]:
    import resource

    import torch

    from invlab.settings import keep_freed_cpu_memory

    kept = keep_freed_cpu_memory()
    faults = []
    for _ in range(50):
        t = torch.empty(6_000_000, dtype=torch.float64)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t.fill_(1.0)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        del t
    refaulted = sum(f > 48_000_000 // os.sysconf("SC_PAGE_SIZE") // 2 for f in faults[-20:])
    return kept, refaulted, os.environ.get("MALLOC_TRIM_THRESHOLD_")


def test_a_dask_worker_keeps_freed_memory_too(scheduler):
    """Dask's nanny exports its own MALLOC_TRIM_THRESHOLD_ into every worker; that is not the user's tuning, and a
    sweep's runs must not page-fault their tensors in again every step because of it.

    The task runs in a worker thread, whose own glibc arena faults the tensor in again for its first ~9 iterations
    before it reuses it; on a 2-core machine the worker's threads share arenas and that warm-up can run longer, so
    the last 20 of 50 iterations are counted (Dask's own setting faults every one of them in again)."""
    distributed = pytest.importorskip("distributed")
    with distributed.Client(scheduler, set_as_default=False) as client:  # the session's cluster (tests/conftest.py)
        kept, faults, variable = client.submit(_loop_on_worker, pure=False).result(timeout=120)
    assert variable is not None  # the worker really runs under Dask's allocator setting
    assert kept is True
    assert faults <= 3  # of the last 20 iterations, at most three faulted the tensor in again


THREAD_LOOP = textwrap.dedent("""
    import resource, sys, threading, torch
    from invlab.settings import keep_freed_cpu_memory, one_malloc_arena
    keep_freed_cpu_memory()
    arena = one_malloc_arena() if sys.argv[1] == "one" else False
    t_pages = 32_000_000 // resource.getpagesize()
    faults = []

    def loop():  # a page's training thread: 32 MB tensors (under a thread heap's 64 MB) made, written and freed
        for i in range(30):
            t = torch.empty(4_000_000, dtype=torch.float64)
            small = [torch.ones(100) for _ in range(10)]
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t.fill_(1.0)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
            del t

    thread = threading.Thread(target=loop)
    thread.start()
    thread.join()
    print(arena, sum(f > t_pages // 2 for f in faults[-10:]))  # iterations that faulted the tensor in again
""")


def test_a_training_thread_on_the_main_arena_reuses_its_freed_tensors():
    """A thread's own glibc arena gives its freed tensors back and faults them in again; once threads are kept on
    the main arena (as before a page's training thread starts) the same memory is written again without faults."""
    def run(mode, **env):
        out = subprocess.run([sys.executable, "-c", THREAD_LOOP, mode], capture_output=True, text=True, check=True,
                             env={**os.environ, **env}, cwd=os.getcwd()).stdout.split()
        return out[0], int(out[1])

    applied, faults_one = run("one")
    assert applied == "True"
    _, faults_own = run("own")
    assert faults_own >= 3  # the tensor faulted in again, step after step, in the thread's own arena
    assert faults_one <= 1


@pytest.mark.parametrize("variable, value", [("MALLOC_ARENA_MAX", "4"), ("INVLAB_KEEP_FREED_CPU_MEMORY", "0"),
                                             ("GLIBC_TUNABLES", "glibc.malloc.arena_max=4")])
def test_one_arena_is_left_alone_where_the_user_tuned_the_allocator(fresh_settings, monkeypatch, variable, value):
    """The user's own setting is left alone, decided from the environment before the allocator is touched."""
    monkeypatch.setenv(variable, value)
    monkeypatch.setattr(fresh_settings.ctypes, "CDLL", lambda *a: pytest.fail("the allocator was changed"))
    assert fresh_settings.one_malloc_arena() is False
