#!/usr/bin/env bash
# A record's journey: kafkalike-trace.sh --bootstrap-server host:port --topic T [--key K] [--value V]
# [--acks 0|1|all] [--linger-ms N] [--partition N] [--consume] (docs/journey.md).
# The checkout's root is found from this script's own location.
base_dir="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
export PYTHONPATH="${base_dir}${PYTHONPATH:+:${PYTHONPATH}}"
exec "${PYTHON:-python3}" -m kafkalike.cli.trace "$@"
