"""Which base image the docker backend builds its lab image on, decided without a dockerd.

An image dockerd already has is used as is; otherwise the Dockerfile's public default is
pulled from a registry, and only when that pull fails (quickly) is the base built with
debootstrap (docker/build-base.sh). The real build runs in tests/integration/test_lab_docker.py
on a dockerd whose images persist, so this decision is pinned here with a fake client.
"""
from __future__ import annotations

import subprocess
from types import SimpleNamespace

import docker
import pytest
import requests

from kafkalike.lab import docker as lab_docker
from kafkalike.lab.state import LabError


class FakeImages:
    """images.get/pull as the SDK has them; a pull records the client's timeout during it."""

    def __init__(self, api: SimpleNamespace, present: set[str], pull_error: Exception | None) -> None:
        self.api, self.present, self.pull_error = api, present, pull_error
        self.pulls: list[tuple[str, str, float]] = []

    def get(self, name: str):
        if name not in self.present:
            raise docker.errors.ImageNotFound(f"No such image: {name}")
        return SimpleNamespace(name=name, labels={})

    def pull(self, repository: str, tag: str):
        self.pulls.append((repository, tag, self.api.timeout))
        if self.pull_error is not None:
            raise self.pull_error
        self.present.add(f"{repository}:{tag}")
        return self.get(f"{repository}:{tag}")


def fake_client(present: set[str] = frozenset(), pull_error: Exception | None = None) -> SimpleNamespace:
    api = SimpleNamespace(timeout=300)
    return SimpleNamespace(api=api, images=FakeImages(api, set(present), pull_error))


@pytest.fixture
def debootstrap(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """debootstrap installed, build-base.sh succeeding; the commands run are recorded."""
    runs: list[list[str]] = []

    def run(command, **kwargs):
        runs.append(command)
        return subprocess.CompletedProcess(command, 0, "", "")
    monkeypatch.setattr(lab_docker.shutil, "which", lambda tool: f"/usr/sbin/{tool}")
    monkeypatch.setattr(lab_docker.subprocess, "run", run)
    return runs


def test_an_image_already_here_is_used_without_a_pull(debootstrap: list[list[str]]):
    for present in ({lab_docker.BASE_IMAGE}, {lab_docker.PUBLIC_BASE}):
        client = fake_client(present)
        assert lab_docker.ensure_base(client, lambda line: None) in present
        assert client.images.pulls == [] and debootstrap == []


def test_a_registry_that_answers_gives_the_public_base(debootstrap: list[list[str]]):
    client = fake_client()
    said: list[str] = []
    assert lab_docker.ensure_base(client, said.append) == lab_docker.PUBLIC_BASE == "python:3.11-slim-bookworm"
    # Pulled with the short timeout, which is put back afterwards; no debootstrap.
    assert client.images.pulls == [("python", "3.11-slim-bookworm", lab_docker.PULL_TIMEOUT)]
    assert lab_docker.PULL_TIMEOUT <= 30 and client.api.timeout == 300
    assert debootstrap == []
    assert said[0] == "pulling base image python:3.11-slim-bookworm" and "pulled in" in said[-1]


@pytest.mark.parametrize("error", [
    docker.errors.APIError("Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io: "
                           "no such host"),
    requests.exceptions.ReadTimeout("UnixHTTPConnectionPool(host='localhost', port=None): Read timed out."),
    docker.errors.ImageNotFound("No such image: python:3.11-slim-bookworm"),
], ids=["registry-unreachable", "pull-hangs", "nothing-pulled"])
def test_no_registry_falls_back_to_debootstrap(debootstrap: list[list[str]], error: Exception):
    client = fake_client(pull_error=error)
    said: list[str] = []
    assert lab_docker.ensure_base(client, said.append) == lab_docker.BASE_IMAGE
    assert len(client.images.pulls) == 1 and client.api.timeout == 300
    [command] = debootstrap
    assert command[:3] == ["bash", str(lab_docker.BASE_SCRIPT), lab_docker.BASE_IMAGE]
    assert any(line.startswith("no registry gave python:3.11-slim-bookworm") for line in said), said
    assert any(line.startswith("building base image kafkalike-base:bookworm with debootstrap") for line in said)


def test_no_registry_and_no_debootstrap_is_one_line(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(lab_docker.shutil, "which", lambda tool: None)
    client = fake_client(pull_error=docker.errors.APIError("no such host"))
    with pytest.raises(LabError) as raised:
        lab_docker.ensure_base(client, lambda line: None)
    message = str(raised.value)
    assert "\n" not in message
    assert "python:3.11-slim-bookworm could not be pulled" in message and "apt-get install debootstrap" in message
