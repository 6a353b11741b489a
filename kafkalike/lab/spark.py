"""Spark for tests and the lab: a local SparkSession, or a real standalone cluster.

Both run the Spark that the pyspark wheel carries (its jars, its bin/spark-class), on
loopback only, with the Python interpreter that runs this code on the driver and in
every Python worker, so executors import the same kafkalike and pyarrow.

A process holds one SparkSession (one JVM): the tests share one local session per run,
and a job against a standalone cluster runs its driver in a process of its own.

Measured on the 2-core lab VM (pyspark 4.3.0, Java 17): master + 2 workers ALIVE 8 s
after start() on a quiet machine, 15-22 s while other JVMs load it; a local[2] session
starts in 6 s (11-12 s loaded) and its first job takes another ~6 s.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Mapping

from kafkalike.lab.zookeeper import death_signal_prefix, free_ports
from kafkalike.lab.processes import group_alive

REPO_ROOT = Path(__file__).resolve().parents[2]
INSTALL_HINT = "install it with ./scripts/setup.sh --test (it installs the spark extra: pyspark>=4.0 and pyarrow)"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"

# Settings for a small shared box (2 cores, 24 GiB): no web UI, few shuffle partitions,
# everything on loopback, Python workers kept between tasks, timestamps shown in UTC.
SESSION_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.memory": "2g",
    "spark.python.worker.reuse": "true",
    "spark.sql.session.timeZone": "UTC",
}


class SparkNotInstalled(RuntimeError):
    """pyspark (or Java) is missing; tests must fail on this, not skip."""


class SparkStartError(RuntimeError):
    """A master or worker exited or never became ready; the message carries its log tail."""


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark package (jars/, bin/spark-class)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise SparkNotInstalled(f"pyspark is not installed: {INSTALL_HINT}")
    home = Path(spec.origin).resolve().parent
    if not (home / "bin" / "spark-class").exists() or not (home / "jars").is_dir():
        raise SparkNotInstalled(f"pyspark at {home} carries no bin/spark-class or jars/: {INSTALL_HINT}")
    return home


def java_home() -> str | None:
    """$JAVA_HOME when it holds bin/java, else the JDK behind the java on PATH, else None."""
    configured = os.environ.get("JAVA_HOME")
    if configured and (Path(configured) / "bin" / "java").exists():
        return configured
    found = shutil.which("java")
    if found is None:
        return None
    # /usr/bin/java -> /etc/alternatives/java -> /usr/lib/jvm/<jdk>/bin/java
    return str(Path(found).resolve().parents[1])


def spark_env() -> dict[str, str]:
    """The variables Spark needs here, to lay over os.environ.

    The driver and every Python worker run sys.executable (left alone, workers start
    whatever python3 is on PATH); the JVMs bind to loopback; the repo root is on
    PYTHONPATH so executors import this checkout's kafkalike.
    """
    env = {
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    java = java_home()
    if java is not None:
        env["JAVA_HOME"] = java
    try:
        # A stray $SPARK_HOME (another Spark version) would win over the wheel's own jars.
        env["SPARK_HOME"] = str(spark_home())
    except SparkNotInstalled:
        pass
    paths = [str(REPO_ROOT)]
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(REPO_ROOT)]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def local_session(master: str = "local[2]", app_name: str = "kafkalike",
                  extra_conf: Mapping[str, Any] | None = None):
    """A SparkSession (the one this process may have) with SESSION_DEFAULTS and extra_conf.

    master may also be a standalone cluster's URL (SparkStandalone.master_url).
    Raises SparkNotInstalled when pyspark or Java is missing.
    """
    spark_home()
    if java_home() is None:
        raise SparkNotInstalled("no java on PATH and no $JAVA_HOME: Spark needs Java 17 (zk/install.sh installs it)")
    os.environ.update(spark_env())
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise SparkNotInstalled(f"pyspark cannot be imported ({exc}): {INSTALL_HINT}") from exc
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**SESSION_DEFAULTS, **(extra_conf or {})}.items():
        builder = builder.config(key, str(value))
    session = builder.getOrCreate()
    running = session.sparkContext.master
    if running != master:
        raise RuntimeError(f"this process already runs a SparkSession on {running}; "
                           f"a JVM holds one, so {master} needs a process of its own")
    return session


class _Daemon:
    """One spark-class process (master or worker) and its log file."""

    def __init__(self, name: str, command: list[str], log_path: Path, env: dict[str, str], cwd: Path):
        self.name = name
        self.command = command
        self.log_path = log_path
        self.env = env
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.cwd.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            # Its own process group: kill() then also reaches the executors and Python
            # workers a worker forks. The death signal covers a parent killed with -9.
            self.proc = subprocess.Popen(self.command, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            pass
        # Executors and Python workers left in the group are no children of ours; give
        # them a moment to be gone so the caller may delete their directories.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and group_alive(self.proc.pid):
            time.sleep(0.05)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


class SparkStandalone:
    """A real Spark standalone cluster on loopback: one master and N workers.

    Each daemon is `<pyspark>/bin/spark-class <Master|Worker> ...` as a subprocess with
    spark_env() and its own log file in base_dir (master.log, worker-N.log); worker N
    keeps executor directories in base_dir/worker-N/work and scratch in .../local.
    kill() is kill -9 of every process group (daemons, executors, Python workers).
    An application's spark.executor.memory (1g by default) must fit in a worker's memory.
    """

    def __init__(self, base_dir: Path | str, workers: int = 2, *, host: str = "127.0.0.1",
                 cores: int = 1, memory: str = "1g", daemon_memory: str | None = None,
                 die_with_parent: bool = True, java_options: str = "") -> None:
        self.base_dir = Path(base_dir).absolute()
        self.host = host
        self.worker_count = workers
        self.cores = cores
        self.memory = memory
        self.daemon_memory = daemon_memory
        self.die_with_parent = die_with_parent
        self.java_options = java_options      # on every daemon's java command line (the lab marks its own)
        ports = free_ports(2 + 2 * workers, host)
        self.port, self.webui_port = ports[0], ports[1]
        self.worker_ports = [(ports[2 + 2 * i], ports[3 + 2 * i]) for i in range(workers)]
        self.daemons: list[_Daemon] = []
        self.started_at: float | None = None

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.port}"

    @property
    def web_url(self) -> str:
        return f"http://{self.host}:{self.webui_port}"

    def worker_dir(self, index: int) -> Path:
        """Worker index's directory (1-based, as in the log names)."""
        return self.base_dir / f"worker-{index}"

    def _env(self, extra: Mapping[str, str] = {}) -> dict[str, str]:
        env = dict(os.environ)
        env.update(spark_env())
        env["SPARK_HOME"] = str(spark_home())
        env.update(extra)
        env.pop("SPARK_ENV_LOADED", None)
        if self.daemon_memory:
            env["SPARK_DAEMON_MEMORY"] = self.daemon_memory
        if self.java_options:
            env["SPARK_DAEMON_JAVA_OPTS"] = (env.get("SPARK_DAEMON_JAVA_OPTS", "") + " " + self.java_options).strip()
        return env

    def _prefix(self) -> list[str]:
        return death_signal_prefix() if self.die_with_parent else []

    def start(self) -> "SparkStandalone":
        """Launch master and workers and return at once; then wait_ready()."""
        if any(d.is_running() for d in self.daemons):
            raise SparkStartError(f"the cluster in {self.base_dir} is already running")
        spark_class = str(spark_home() / "bin" / "spark-class")
        if java_home() is None:
            raise SparkNotInstalled("no java on PATH and no $JAVA_HOME: Spark needs Java 17 (zk/install.sh installs it)")
        self.base_dir.mkdir(parents=True, exist_ok=True)
        # The REST submission server would take the fixed port 6066 (or the next free one).
        master_opts = (os.environ.get("SPARK_MASTER_OPTS", "") + " -Dspark.master.rest.enabled=false").strip()
        master = _Daemon(
            "master",
            [*self._prefix(), spark_class, MASTER_CLASS, "--host", self.host,
             "--port", str(self.port), "--webui-port", str(self.webui_port)],
            self.base_dir / "master.log", self._env({"SPARK_MASTER_OPTS": master_opts}), self.base_dir / "master")
        self.daemons = [master]
        for index, (port, webui_port) in enumerate(self.worker_ports, start=1):
            work = self.worker_dir(index)
            (work / "local").mkdir(parents=True, exist_ok=True)
            self.daemons.append(_Daemon(
                f"worker-{index}",
                [*self._prefix(), spark_class, WORKER_CLASS, self.master_url,
                 "--cores", str(self.cores), "--memory", self.memory, "--host", self.host,
                 "--port", str(port), "--webui-port", str(webui_port), "--work-dir", str(work / "work")],
                self.base_dir / f"worker-{index}.log", self._env({"SPARK_LOCAL_DIRS": str(work / "local")}), work))
        self.started_at = time.monotonic()
        # Workers retry their registration, so they may start before the master listens.
        for daemon in self.daemons:
            daemon.start()
        return self

    def master_state(self) -> dict | None:
        """The master web UI's /json answer, or None while it does not answer."""
        return master_json(self.web_url)

    def alive_workers(self) -> int:
        state = self.master_state()
        if state is None:
            return 0
        return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")

    def wait_ready(self, timeout: float = 120.0) -> float:
        """Block until the master is ALIVE with every worker ALIVE; seconds since start()."""
        if not self.daemons:
            raise SparkStartError("start() first")
        deadline = time.monotonic() + timeout
        while True:
            for daemon in self.daemons:
                if not daemon.is_running():
                    raise SparkStartError(
                        f"Spark {daemon.name} ({' '.join(daemon.command)}) exited with "
                        f"{daemon.proc.returncode if daemon.proc else None}; last log lines:\n{daemon.log_tail()}")
            state = self.master_state()
            if state is not None and state.get("status") == "ALIVE":
                alive = sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")
                if alive >= self.worker_count:
                    return time.monotonic() - (self.started_at or 0.0)
            if time.monotonic() >= deadline:
                tails = "\n".join(f"--- {d.log_path.name}:\n{d.log_tail(25)}" for d in self.daemons)
                raise SparkStartError(f"Spark standalone at {self.master_url} not ready after {timeout:.0f}s "
                                      f"(master says {state}); last log lines:\n{tails}")
            time.sleep(0.25)

    def kill(self) -> None:
        """kill -9 every daemon with its executors and Python workers, and wait for them."""
        for daemon in reversed(self.daemons):
            daemon.kill()

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(f"--- {d.log_path.name}:\n{d.log_tail(lines)}" for d in self.daemons)

    def __enter__(self) -> "SparkStandalone":
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.kill()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.kill()

    def __repr__(self) -> str:
        return f"SparkStandalone({self.master_url}, workers={self.worker_count}, dir={self.base_dir})"


def master_json(web_url: str, timeout: float = 2.0) -> dict | None:
    """A standalone master's web UI /json answer (status, workers), or None if it does not answer."""
    try:
        with urllib.request.urlopen(f"{web_url}/json/", timeout=timeout) as answer:
            return json.load(answer)
    except (OSError, urllib.error.URLError, ValueError):
        return None
