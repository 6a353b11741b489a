#!/usr/bin/env bash
# Install what kafkalike needs on Debian 12, skipping whatever is already there.
#   scripts/setup.sh          ZooKeeper and Java (zk/install.sh), kcat, iproute2 and iptables (the
#                             lab's netns backend), then `pip install -e '.[spark]'`
#                             (pyspark and pyarrow: the demo ends with a Spark load)
#   scripts/setup.sh --test   also the test extras: `pip install -e '.[test,spark]'` (the docker SDK
#                             among them), vagrant, docker.io and debootstrap
# A first pyspark install builds it from a ~456 MB source archive: minutes, once.
# PYTHON picks the interpreter (default python3). Safe to run again and again: with
# everything in place it makes no network call.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/scripts/lib/apt.sh"
PYTHON=${PYTHON:-python3}

extras=(spark)
debs=(kcat)   # the demo and the interop tests use it as an independent client
# The lab's netns backend (bin/kafkalike-lab.sh up --backend netns) makes namespaces and
# links with ip, and cuts nodes off from each other with iptables.
debs+=(iproute2 iptables)
case "${1:-}" in
    # vagrant: the tests validate vagrant/Vagrantfile (VMs cannot boot here).
    # docker.io and debootstrap: the lab's docker backend tests start dockerd and, with no
    # registry reachable, build the lab's base image from Debian's packages.
    --test) extras=(test spark); debs+=(vagrant docker.io debootstrap chromium) ;;
    "") ;;
    *) echo "usage: $0 [--test]" >&2; exit 2 ;;
esac

bash "$repo/zk/install.sh"

# A fresh Debian has python3 but not pip.
if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
    debs+=(python3-pip)
fi
if [ ${#debs[@]} -gt 0 ]; then
    apt_install_missing "${debs[@]}"
fi

if "$PYTHON" "$repo/scripts/pydeps_satisfied.py" "$repo" ${extras[@]+"${extras[@]}"}; then
    exit 0
fi

target=$repo
if [ ${#extras[@]} -gt 0 ]; then
    target="${repo}[$(IFS=,; echo "${extras[*]}")]"
fi
pip_flags=(--root-user-action=ignore)
# Debian's own python3 refuses pip installs outside a venv (PEP 668). A machine given to
# kafkalike wants the package importable by plain python3, as bin/ scripts run it.
if "$PYTHON" -c 'import sys, sysconfig, pathlib; sys.exit(not (sys.prefix == sys.base_prefix and (pathlib.Path(sysconfig.get_path("stdlib")) / "EXTERNALLY-MANAGED").exists()))'; then
    pip_flags+=(--break-system-packages)
fi
echo "Installing Python packages: pip install -e '$target'"
"$PYTHON" -m pip install "${pip_flags[@]}" -e "$target"
