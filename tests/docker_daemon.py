"""A docker daemon for the docker lab tests: the one that answers, or one started here.

When no dockerd answers on DOCKER_HOST (or /var/run/docker.sock), `running_dockerd()`
starts Debian's dockerd as root with its data under /var/lib/kafkalike-docker (kept
between runs, so the lab's base and kafkalike images are built once per machine), a
pidfile there, and waits for its socket; on exit it stops that dockerd (its pid, SIGTERM,
then SIGKILL) and nothing else. Where docker cannot run (not root, no dockerd binary, a
daemon that does not come up) the test fails saying why: these tests never skip.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

DATA = Path("/var/lib/kafkalike-docker")
SOCKET = "/var/run/docker.sock"
START_TIMEOUT = 60.0


def _answers() -> bool:
    try:
        import docker
    except ImportError:
        pytest.fail("the docker lab tests need the docker Python SDK: scripts/setup.sh --test installs it")
    try:
        client = docker.from_env(timeout=10)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except docker.errors.DockerException:
        return False


@contextlib.contextmanager
def running_dockerd() -> Iterator[None]:
    if _answers():
        yield
        return
    if os.environ.get("DOCKER_HOST"):
        pytest.fail(f"no docker daemon answers at DOCKER_HOST={os.environ['DOCKER_HOST']}")
    if os.geteuid() != 0:
        pytest.fail("the docker lab tests need a running dockerd, or root to start one")
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        pytest.fail("the docker lab tests need dockerd: scripts/setup.sh --test installs docker.io")
    DATA.mkdir(parents=True, exist_ok=True)
    log = open(DATA / "dockerd.log", "ab")
    process = subprocess.Popen([dockerd, "--data-root", str(DATA / "data"), "--pidfile", str(DATA / "dockerd.pid"),
                                "--host", f"unix://{SOCKET}"], stdin=subprocess.DEVNULL, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _answers():
            if process.poll() is not None:
                tail = (DATA / "dockerd.log").read_text(errors="replace").splitlines()[-5:]
                pytest.fail(f"dockerd exited with {process.returncode} at start: {' | '.join(tail)}")
            if time.monotonic() > deadline:
                pytest.fail(f"dockerd did not answer on {SOCKET} within {START_TIMEOUT:.0f}s")
            time.sleep(0.2)
        yield
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


def lab_leftovers(prefix: str) -> tuple[list[str], list[str], list[str]]:
    """Containers, networks and volumes labelled with a lab's prefix (the SDK's view)."""
    import docker

    from kafkalike.lab.docker import LABEL
    client = docker.from_env(timeout=30)
    try:
        label = {"label": f"{LABEL}={prefix}"}
        return ([c.name for c in client.containers.list(all=True, filters=label)],
                [n.name for n in client.networks.list(filters=label)],
                [v.name for v in client.volumes.list(filters=label)])
    finally:
        client.close()


def remove_lab_leftovers(prefix: str) -> None:
    """Whatever `down` left of a docker lab, removed by label."""
    import docker

    from kafkalike.lab.docker import LABEL
    client = docker.from_env(timeout=60)
    try:
        label = {"label": f"{LABEL}={prefix}"}
        for found in client.containers.list(all=True, filters=label):
            with contextlib.suppress(docker.errors.NotFound):
                found.remove(force=True)
        for found in client.networks.list(filters=label):
            with contextlib.suppress(docker.errors.NotFound):
                found.remove()
        for found in client.volumes.list(filters=label):
            with contextlib.suppress(docker.errors.NotFound):
                found.remove(force=True)
    finally:
        client.close()
