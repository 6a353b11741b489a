#!/usr/bin/env bash
# Build the lab's base image without a registry: debootstrap Debian bookworm (minbase) with
# Python, Java 17 and ZooKeeper from Debian's packages, and `docker import` it.
#   docker/build-base.sh [TAG] [MIRROR]      TAG default kafkalike-base:bookworm
# MIRROR defaults to the first Debian URI in /etc/apt/sources.list.d/*.sources (or
# /etc/apt/sources.list), else http://deb.debian.org/debian. Needs root, debootstrap, docker.
# kafkalike-lab.sh up --backend docker does the same from Python when the image is missing.
set -euo pipefail
tag=${1:-kafkalike-base:bookworm}
mirror=${2:-}
if [ -z "$mirror" ]; then
    mirror=$(sed -n 's/^URIs:[[:space:]]*\(http[^[:space:]]*\/debian\)[[:space:]]*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 || true)
fi
if [ -z "$mirror" ]; then
    mirror=$(sed -n 's/^deb[[:space:]]\+\(http[^[:space:]]*\/debian\)[[:space:]]\+bookworm[[:space:]].*/\1/p' /etc/apt/sources.list 2>/dev/null | head -1 || true)
fi
mirror=${mirror:-http://deb.debian.org/debian}
root=$(mktemp -d /var/tmp/kafkalike-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase \
    --include=python3,python3-pip,python3-venv,openjdk-17-jre-headless,zookeeper,iproute2,ca-certificates \
    bookworm "$root" "$mirror"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'CMD ["/bin/bash"]' - "$tag"
