#!/usr/bin/env bash
# Start a kafkalike broker: kafka-server-start.sh [-daemon] server.properties [--override k=v]*
# In the foreground by default; with -daemon in the background, output in
# $LOG_DIR/kafkaServer.out (LOG_DIR defaults to logs/ beside bin/), as Kafka's script does.
# The broker runs with LOG_DIR in its environment: bin/kafka-server-stop.sh stops the
# brokers of its own LOG_DIR by it.
if [ $# -lt 1 ]; then
    echo "USAGE: $0 [-daemon] server.properties [--override property=value]*"
    exit 1
fi
base_dir="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
export PYTHONPATH="${base_dir}${PYTHONPATH:+:${PYTHONPATH}}"
export LOG_DIR="${LOG_DIR:-$base_dir/logs}"
mkdir -p "$LOG_DIR"
if [ "$1" = "-daemon" ]; then
    shift
    nohup "${PYTHON:-python3}" -m kafkalike.broker.main "$@" > "$LOG_DIR/kafkaServer.out" 2>&1 < /dev/null &
    exit 0
fi
exec "${PYTHON:-python3}" -m kafkalike.broker.main "$@"
