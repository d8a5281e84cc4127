"""A real Spark cluster for the tests, on 127.0.0.1: a standalone master and workers (each
a JVM process of its own, one core each) and a Spark Connect server, started from the
``spark-class`` and ``spark-submit`` that ship with pyspark. Every process is started in a
session of its own and stopped with its whole process group (the executors and Python
workers it started), also when a test fails.

The environment the executors run is packed by the recipe in docs/spark.md, read from
there and run as it is written."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
from helpers import free_port

ROOT = Path(__file__).resolve().parent.parent
SPARK_HOME = Path(pyspark.__file__).parent
LOOPBACK = "127.0.0.1"
CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"


def spark_env(log_dir: Path) -> dict[str, str]:
    """What every process of the cluster runs with: loopback only, logs in ``log_dir``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    return {**env, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": LOOPBACK, "SPARK_LOG_DIR": str(log_dir)}


class Daemon:
    """One JVM of the cluster, its output in ``log``."""

    def __init__(self, name: str, command: list[str], log: Path, env: dict[str, str]):
        self.name, self.log = name, log
        with open(log, "wb") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )

    def wait_for(self, pattern: str, timeout: float = 120) -> None:
        """Until ``pattern`` shows in the log; fails with the log's end if the process
        exits or the time runs out first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, self.log.read_text(errors="replace")):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.25)
        tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])
        raise RuntimeError(f"{self.name} did not log {pattern!r} (exit status {self.process.poll()}):\n{tail}")

    def stop(self) -> None:
        """SIGTERM to the process group (so the executors and their Python workers go too),
        SIGKILL if it is still there after 20 s."""
        for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            try:
                self.process.wait(grace)
                break
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(ProcessLookupError):  # what the group left behind
            os.killpg(self.process.pid, signal.SIGKILL)


def spark_class(main: str, *args: str) -> list[str]:
    return [str(SPARK_HOME / "bin" / "spark-class"), main, *args]


@contextlib.contextmanager
def standalone_cluster(folder: Path, workers: int = 2) -> Iterator[str]:
    """A standalone master and ``workers`` workers of one core each; yields the master's URL."""
    folder.mkdir(parents=True, exist_ok=True)
    env = spark_env(folder)
    port = free_port()
    master_url = f"spark://{LOOPBACK}:{port}"
    daemons: list[Daemon] = []
    try:
        master = Daemon(
            "the Spark master",
            spark_class(
                "org.apache.spark.deploy.master.Master", "--host", LOOPBACK, "--port", str(port), "--webui-port", "0"
            ),
            folder / "master.log",
            env,
        )
        daemons.append(master)
        master.wait_for(r"I have been elected leader|Starting Spark master")
        for i in range(workers):
            worker = Daemon(
                f"Spark worker {i}",
                spark_class(
                    "org.apache.spark.deploy.worker.Worker",
                    master_url,
                    *("--host", LOOPBACK, "--cores", "1", "--memory", "2g", "--webui-port", "0"),
                    *("--work-dir", str(folder / f"worker-{i}")),
                ),
                folder / f"worker-{i}.log",
                env,
            )
            daemons.append(worker)
        for worker in daemons[1:]:
            worker.wait_for(r"Successfully registered with master")
        yield master_url
    finally:
        for daemon in reversed(daemons):
            daemon.stop()


@contextlib.contextmanager
def connect_server(folder: Path, master_url: str, settings: dict[str, str], python: str | None = None) -> Iterator[str]:
    """A Spark Connect server whose jobs run on ``master_url``; yields its ``sc://`` URL.
    ``python``: the Python the server runs a Python data source's driver side in (its
    ``PYSPARK_PYTHON``; the server gives a source no other), which must import the source."""
    port = free_port()
    conf = {"spark.connect.grpc.binding.port": str(port), "spark.connect.grpc.binding.address": LOOPBACK, **settings}
    command = [str(SPARK_HOME / "bin" / "spark-submit"), "--class", CONNECT_SERVER, "--master", master_url]
    folder.mkdir(parents=True, exist_ok=True)
    env = spark_env(folder)
    if python is not None:
        env["PYSPARK_PYTHON"] = python
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    server = Daemon("the Spark Connect server", [*command, "spark-internal"], folder / "connect.log", env)
    try:
        server.wait_for(r"Spark Connect server started|SparkConnectServer.*started|Started .*SparkConnect")
        yield f"sc://{LOOPBACK}:{port}"
    finally:
        server.stop()


def recipe(markdown: Path, heading: str) -> list[str]:
    """The commands of the first ``bash`` block after ``heading`` in ``markdown``."""
    text = markdown.read_text()
    section = text[text.index(heading) :]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None, f"no bash block after {heading!r} in {markdown}"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


# What test.sh gives the Rust tests only: with them, maturin would compile pyo3 and the
# crate again instead of reusing the extension setup.sh built (pyo3 tracks its settings).
_RUST_TEST_SETTINGS = ("PYO3_PYTHON", "RUSTC_WORKSPACE_WRAPPER")


def pack_environment(folder: Path) -> Path:
    """Builds merge-core's wheel and runs docs/spark.md's recipe in ``folder``; returns the
    packed environment."""
    folder.mkdir(parents=True, exist_ok=True)
    maturin = Path(sys.executable).parent / "maturin"
    for line in recipe(ROOT / "docs" / "spark.md", "## On a cluster"):
        if line.startswith("maturin "):  # run in the checkout, the wheel goes to folder/dist
            assert line.split()[-2] == "--out", line
            command, cwd = [str(maturin), *line.split()[1:-1], str(folder / "dist")], ROOT
            env = {k: v for k, v in os.environ.items() if k not in _RUST_TEST_SETTINGS}
            env["VIRTUAL_ENV"] = str(Path(sys.executable).parent.parent)
        else:
            command, cwd, env = ["bash", "-c", line], folder, _machine_python()
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"{line!r} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    archives = [p for p in folder.iterdir() if p.name.startswith("env.tar")]
    assert len(archives) == 1, archives
    return archives[0]


def _machine_python() -> dict[str, str]:
    """The environment with the test's own venv off PATH and the interpreter it was made
    from first, so ``python`` in the recipe is the driver's Python version and nothing of
    the driver's venv leaks into the packed one."""
    venv = str(Path(sys.executable).parent)
    base = str(Path(getattr(sys, "_base_executable", sys.executable)).parent)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join([base, *(p for p in env.get("PATH", "").split(os.pathsep) if p != venv)])
    return env
