"""Timing, memory and result checks shared by every benchmark suite."""

from __future__ import annotations

import ctypes
import importlib.util
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

MiB = 1 << 20


@dataclass
class Run:
    """One tool's figures in one suite; `note` says why a run has no figures."""

    tool: str
    seconds: float | None = None
    rows: int | None = None
    peak_bytes: int | None = None
    same: bool | None = None
    cpu_seconds: float | None = None
    note: str = ""
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class Section:
    """A suite's part of the report."""

    name: str
    title: str
    about: list[str]
    runs: list[Run]
    extra_columns: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)


@dataclass
class Peer:
    """A tool to time: `module` is what must be importable for it to run. `in_process`
    is false for a tool that works in another process (Spark's JVM), whose CPU time this
    process cannot see. `compared` is false for a floor (part of the work, not the
    result), whose result is not checked against the others'. `repeat` overrides the
    suite's repeat count (a peer that takes minutes runs once)."""

    tool: str
    run: Callable[[], Any]
    module: str | None = None
    in_process: bool = True
    compared: bool = True
    repeat: int | None = None


def missing(module: str | None) -> str | None:
    """Why a peer cannot run here, or None."""
    if module is None or importlib.util.find_spec(module) is not None:
        return None
    return f"skipped: {module} is not installed"


def peak_rss() -> int:
    """This process's resident high-water mark (VmHWM; `ru_maxrss` would include a parent's)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))


def cpu_seconds() -> float:
    """CPU time this process has used so far: every thread's, user and system."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def tree_cpu() -> dict[int, float] | None:
    """CPU seconds used so far by this process and by each process below it (Spark's JVM
    and its Python workers), by process id; None where /proc is missing. Compare two with
    :func:`cpu_between`."""
    import os

    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    parents, ticks = {}, {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        parents[pid] = int(fields[1])
        ticks[pid] = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime

    def below_us(pid: int) -> bool:
        for _ in range(64):  # a chain of parents is short; a loop would be a /proc race
            if pid == os.getpid():
                return True
            pid = parents.get(pid, 0)
            if pid <= 1:
                return False
        return False

    tick = os.sysconf("SC_CLK_TCK")
    return {pid: t / tick for pid, t in ticks.items() if below_us(pid)}


def cpu_between(before: dict[int, float] | None, after: dict[int, float] | None) -> float | None:
    """CPU seconds the process tree used between two :func:`tree_cpu` readings, process by
    process: a process that exited in between counts for nothing rather than taking its
    whole past off the sum. PySpark's daemon ignores SIGCHLD, so its exited workers are
    never added to its children's time: a plain sum of the tree fell by all a worker had
    ever used when Spark stopped it during the next job."""
    if before is None or after is None:
        return None
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def release_free_memory() -> None:
    """Hands memory freed by earlier runs back to the OS (pyarrow's pool, then glibc's
    heap, where merge-core allocates), so that a run reusing it still counts it."""
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc


def reset_peak_rss() -> None:
    """Lets VmHWM measure one run in a long process (Linux: clear_refs 5); harmless elsewhere."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def written_bytes() -> int:
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("wchar:"))


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def failure(error: BaseException) -> str:
    """A failed run's note: the error's type and first line."""
    first = (str(error).splitlines() or [""])[0]
    return f"failed: {type(error).__name__}: {first[:160]}"


def timed(label: str, work: Callable[[], Any]) -> tuple[Any, float]:
    """One run of `work`, reported as progress; its result and seconds."""
    start = time.perf_counter()
    result = work()
    seconds = time.perf_counter() - start
    progress(f"  {label}: {seconds:.2f} s")
    return result, seconds


def time_peers(peers: list[Peer], repeat: int, rows: int, same: Callable[[Any, Any], bool]) -> list[Run]:
    """Times each peer (best of `repeat`) with its peak memory above where it started, and
    checks its result against the first compared peer's. A peer that fails is reported,
    not faked."""
    runs, reference = [], None
    for peer in peers:
        why = missing(peer.module)
        if why:
            runs.append(Run(peer.tool, note=why))
            progress(f"  {peer.tool}: {why}")
            continue
        try:
            seconds, peak, cpu, result = measure(peer.run, peer.repeat or repeat)
        except Exception as error:  # a peer's failure is a finding of the benchmark
            runs.append(Run(peer.tool, note=failure(error)))
            progress(f"  {peer.tool}: {runs[-1].note}")
            continue
        if reference is None and peer.compared:
            reference = result
        checked = same(reference, result) if peer.compared else None
        runs.append(Run(peer.tool, seconds, rows, peak, checked, cpu if peer.in_process else None))
        progress(f"  {peer.tool}: {seconds:.2f} s, peak +{peak // MiB} MiB, same result: {runs[-1].same}")
        del result
    return runs


def measure(run: Callable[[], Any], repeat: int) -> tuple[float, int, float, Any]:
    """Best time of `repeat` runs, the highest memory above the start, the CPU seconds of
    the best run (all of this process's threads), and the last result.

    Before the first run, freed memory is handed back to the OS, so that its peak counts
    what it faults in (all of it for glibc's heap, where merge-core allocates; pyarrow's
    mimalloc pool keeps most of its pages even through `release_unused`). The later runs
    start as the run before left the process, as in a process that reads again and again:
    handing memory back before every run made only glibc's users fault their pages in
    again on each one."""
    best, peak, best_cpu, result = float("inf"), 0, 0.0, None
    for i in range(repeat):
        result = None  # the previous result must not count against this run's memory
        if i == 0:
            release_free_memory()
        reset_peak_rss()
        base = rss()
        cpu, start = cpu_seconds(), time.perf_counter()
        result = run()
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        if seconds < best:
            best, best_cpu = seconds, cpu
        peak = max(peak, peak_rss() - base)
    return best, peak, best_cpu, result


def same_rows(reference: pa.Table, other: Any, order_by: str | None = None) -> bool:
    """Equal content, column by column in the reference's schema (string layouts and
    nullability aside); ordered by `order_by` first when the tools' row orders may differ."""
    other = other if isinstance(other, pa.Table) else pa.table(other)
    if other.num_rows != reference.num_rows or set(other.column_names) != set(reference.column_names):
        return False
    other = other.select(reference.column_names).cast(reference.schema)
    if order_by:
        reference, other = reference.sort_by(order_by), other.sort_by(order_by)
    return other.equals(reference)
