#!/usr/bin/env bash
# The web dashboard: kafkalike-dashboard.sh --bootstrap-server host:port [--zookeeper host:port]
# [--port 9179] [--host 127.0.0.1] [--refresh 5] [--window 10] [--metrics-url URL]* (docs/dashboard.md).
# Runs in the foreground; the checkout's root is found from this script's own location.
base_dir="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
export PYTHONPATH="${base_dir}${PYTHONPATH:+:${PYTHONPATH}}"
exec "${PYTHON:-python3}" -m kafkalike.dashboard.main "$@"
