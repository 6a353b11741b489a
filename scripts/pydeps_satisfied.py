"""Exit 0 when this checkout is pip-installed (editable) and every requirement is met.

scripts/setup.sh asks this before running `pip install -e`, which would otherwise
rebuild the editable install and consult the package index on every run. Requirements
and console scripts come from setup.cfg rather than from the installed metadata, so an
edit to setup.cfg (a new dependency, a new bin/ entry point) makes the next setup
install again.

usage: python scripts/pydeps_satisfied.py REPO [EXTRA ...]
"""
from __future__ import annotations

import configparser
import importlib.metadata as metadata
import importlib.util
import sys
from pathlib import Path

try:
    from packaging.requirements import Requirement
except ImportError:  # a bare interpreter: pip always carries a copy
    from pip._vendor.packaging.requirements import Requirement


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]


def problems(repo: Path, extras: list[str]) -> list[str]:
    """Reasons to run pip; empty when nothing is missing."""
    config = configparser.ConfigParser()
    config.read(repo / "setup.cfg")
    name = config["metadata"]["name"]
    found = []

    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or not Path(spec.origin).resolve().is_relative_to(repo.resolve()):
        found.append(f"{name} is not installed from {repo}")
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return found + [f"no installed distribution {name}"]
    if dist.version != config["metadata"]["version"]:
        found.append(f"{name} {dist.version} installed, setup.cfg says {config['metadata']['version']}")

    wanted = {}
    if config.has_option("options.entry_points", "console_scripts"):
        for line in _lines(config["options.entry_points"]["console_scripts"]):
            script, target = line.split("=", 1)
            wanted[script.strip()] = target.strip()
    installed = {ep.name: ep.value for ep in dist.entry_points if ep.group == "console_scripts"}
    if wanted != installed:
        found.append(f"console scripts differ: setup.cfg {wanted}, installed {installed}")

    requirements = _lines(config["options"].get("install_requires", ""))
    for extra in extras:
        requirements += _lines(config["options.extras_require"].get(extra, ""))
    for line in requirements:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            found.append(f"{requirement.name} is missing")
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            found.append(f"{requirement.name} {version} does not satisfy {requirement}")
    return found


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    found = problems(Path(argv[0]), argv[1:])
    for problem in found:
        print(f"setup: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
