#!/usr/bin/env bash
# Thin shim over kafkalike.cli.features; the checkout's root is found from this
# script's own location, so it runs from anywhere without installing the package.
base_dir="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
export PYTHONPATH="${base_dir}${PYTHONPATH:+:${PYTHONPATH}}"
exec "${PYTHON:-python3}" -m kafkalike.cli.features "$@"
