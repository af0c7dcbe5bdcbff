"""linker.overlap: work beside the caller only where torch keeps to one thread, with results and errors either way."""

from __future__ import annotations

import threading

import pytest
import torch

from linker.overlap import beside, in_parallel


@pytest.fixture
def torch_threads():  # type: ignore[no-untyped-def]
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


def _where(x: int) -> tuple[int, str]:
    return x * 2, threading.current_thread().name


def test_with_one_torch_thread_the_work_runs_on_a_pool_thread(torch_threads) -> None:  # type: ignore[no-untyped-def]
    torch_threads(1)
    assert in_parallel()
    value, thread = beside(_where, 21).result()
    assert value == 42 and thread.startswith("linker-beside")


def test_with_several_torch_threads_the_work_runs_here(torch_threads) -> None:  # type: ignore[no-untyped-def]
    torch_threads(2)
    assert not in_parallel()
    future = beside(_where, 21)
    assert future.done() and future.result() == (42, threading.current_thread().name)


@pytest.mark.parametrize("threads", [1, 2])
def test_an_error_comes_back_from_result(torch_threads, threads: int) -> None:  # type: ignore[no-untyped-def]
    torch_threads(threads)

    def fails() -> None:
        raise ValueError("bad context")

    future = beside(fails)
    with pytest.raises(ValueError, match="bad context"):
        future.result()


def test_a_forked_child_gets_a_pool_of_its_own(torch_threads) -> None:  # type: ignore[no-untyped-def]
    import multiprocessing

    torch_threads(1)
    assert beside(_where, 1).result()[0] == 2  # the parent's pool exists and has threads
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:  # the child links beside its own threads, not the parent's dead ones
        assert pool.apply_async(_in_child).get(timeout=60) == 42


def _in_child() -> int:
    torch.set_num_threads(1)
    return beside(_where, 21).result(timeout=30)[0]
