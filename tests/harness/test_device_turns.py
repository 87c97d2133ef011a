"""A job's side of sharing the device until timing: what it tells the judge as it compiles, benchmarks inside a
compile and times, and Inductor's real benchmarker holding the device alone for each benchmark."""

from __future__ import annotations

import torch

from kernelpro.harness.compile_watch import reporting_compiles
from kernelpro.harness.device_turns import DeviceTurns, benchmarks_hold_the_device, releases_while_compiling


class Judge:
    """The judge's end of the channel: the messages, and the answers the job waited for."""

    def __init__(self) -> None:
        self.said: list[str] = []
        self.answers = 0

    def emit(self, message: dict) -> None:
        if "turn" in message:
            self.said.append(message["turn"])

    def go(self) -> None:
        self.answers += 1


def test_a_sharing_job_lets_the_device_go_while_dynamo_compiles_and_takes_it_alone_to_benchmark():
    judge = Judge()
    turns = DeviceTurns(judge.emit, judge.go, sharing=True)
    turns.compile_started("DYNAMO")
    with turns.alone_to_benchmark():
        with turns.alone_to_benchmark():  # nested benchmark calls ask once
            assert turns.state == "benchmarking"
        assert turns.state == "benchmarking"
    assert turns.state == "released"  # back to what the compile had: nothing held, no answer awaited
    turns.compile_ended()
    assert judge.said == ["none", "benchmark", "none", "shared"] and judge.answers == 2
    turns.compile_started("CUDAGRAPH_RECORDING")  # runs kernels: the device is kept
    turns.compile_started(None)  # a Dynamo that does not say why: kept too
    turns.compile_ended()
    with turns.alone_to_benchmark():  # a benchmark outside a compile (a runtime autotuner): alone too, then shared
        pass
    assert judge.said[4:] == ["benchmark", "shared"] and judge.answers == 4 and turns.state == "shared"
    turns.alone()
    turns.alone()
    with turns.alone_to_benchmark():  # timing: alone already
        pass
    turns.compile_started("DYNAMO")  # a compile while timing keeps the device alone
    turns.compile_ended()
    assert judge.said[6:] == ["exclusive"] and judge.answers == 5


def test_benchmarks_on_two_threads_share_one_hold_and_a_compile_ending_meanwhile_is_remembered():
    import threading

    judge = Judge()
    turns = DeviceTurns(judge.emit, judge.go, sharing=True)
    turns.compile_started("DYNAMO")
    started, finish = threading.Event(), threading.Event()

    def benchmark() -> None:
        with turns.alone_to_benchmark():
            started.set()
            finish.wait(10)

    other = threading.Thread(target=benchmark)
    other.start()
    started.wait(10)
    with turns.alone_to_benchmark():  # the other thread's hold covers this one
        turns.compile_ended()  # the compile ends during the benchmarks: they go back to shared, not to nothing
    assert turns.state == "benchmarking"  # the other benchmark still runs
    finish.set()
    other.join(10)
    assert judge.said == ["none", "benchmark", "shared"] and turns.state == "shared"


def test_a_job_that_does_not_share_the_device_says_nothing():
    judge = Judge()
    turns = DeviceTurns(judge.emit, judge.go, sharing=False)
    turns.compile_started("DYNAMO")
    with turns.alone_to_benchmark():
        pass
    turns.compile_ended()
    turns.alone()
    assert judge.said == [] and judge.answers == 0
    assert DeviceTurns(judge.emit, None, sharing=True).state == "held"  # no way to wait: nothing to share


def test_inductors_benchmarker_takes_the_device_alone_for_each_benchmark_and_is_restored_after():
    from torch._inductor.runtime.benchmarking import benchmarker

    judge = Judge()
    turns = DeviceTurns(judge.emit, judge.go, sharing=True)
    with benchmarks_hold_the_device(turns):
        turns.compile_started("DYNAMO")
        ms = benchmarker.benchmark(lambda: torch.ones(8).sum(), device="cpu", warmup=1, rep=1)
        turns.compile_ended()
        benchmarker.benchmark(lambda: torch.ones(8).sum(), device="cpu", warmup=1, rep=1)  # outside a compile
    assert ms >= 0
    assert judge.said == ["none", "benchmark", "none", "shared", "benchmark", "shared"]
    assert "benchmark" not in vars(benchmarker)  # the class's own methods again


def test_dynamo_compiles_are_reported_and_release_the_device_of_a_sharing_job():
    import torch._dynamo  # noqa: F401 - the worker imports it for candidates that compile

    judge = Judge()
    compiling: list[bool] = []

    def emit(message: dict) -> None:
        judge.emit(message)
        if "compiling" in message:
            compiling.append(message["compiling"])

    turns = DeviceTurns(emit, judge.go, sharing=True)
    torch._dynamo.reset()
    with reporting_compiles(emit, turns):
        compiled = torch.compile(lambda x: torch.relu(x) * 2, backend="eager")
        compiled(torch.ones(4))
    assert compiling[:1] == [True] and compiling[-1:] == [False]
    assert judge.said == ["none", "shared"] and turns.state == "shared"


def test_a_job_told_not_to_release_while_compiling_holds_the_device_through_its_compiles():
    judge = Judge()
    turns = DeviceTurns(judge.emit, judge.go, sharing=True, release_while_compiling=False)
    turns.compile_started("DYNAMO")
    turns.compile_ended()
    turns.alone()
    assert judge.said == ["exclusive"] and judge.answers == 1


def test_compiles_release_a_gpu_by_default_never_the_cpu_they_run_on():
    assert releases_while_compiling("auto", "cuda:1") and not releases_while_compiling("auto", "cpu")
    assert releases_while_compiling("on", "cpu") and not releases_while_compiling("off", "cuda")


def test_the_time_a_judgment_let_the_device_go_is_not_device_time():
    from kernelpro.harness.result import EvalResult

    shared = EvalResult(status="ok", elapsed_s=20.0, details={"device_turn": {"shared_s": 3.0, "released_s": 14.0,
                                                                              "alone_s": 3.0}})
    assert shared.device_s == 6.0
    assert EvalResult(status="ok", elapsed_s=20.0).device_s == 20.0  # held throughout
    assert EvalResult(status="runtime_error").device_s == 0.0
