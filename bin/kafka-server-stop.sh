#!/usr/bin/env bash
# Stop the kafkalike brokers that bin/kafka-server-start.sh started with the same LOG_DIR
# (default logs/ beside bin/), with SIGTERM (or $SIGNAL): a clean, controlled shutdown.
# Prints "No kafka server to stop" and exits 1 when there is none, like Kafka's script.
#
# Kafka 2.8's script stops every broker on the machine. Here, as with
# bin/zookeeper-server-stop.sh, the scope is one LOG_DIR, so labs and test runs that keep
# several installations on one machine do not stop each other's brokers; brokers started
# with the default LOG_DIR (the usual case, several server-N.properties included) are all
# stopped together, as in Kafka. A broker's LOG_DIR is read from its environment.
set -euo pipefail

base_dir=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
SIGNAL=${SIGNAL:-TERM}
LOG_DIR=${LOG_DIR:-$base_dir/logs}
LOG_DIR=$(cd "$LOG_DIR" 2>/dev/null && pwd || echo "$LOG_DIR")

pids=()
for cmdline in /proc/[0-9]*/cmdline; do
    pid=${cmdline#/proc/}
    pid=${pid%/cmdline}
    tr '\0' ' ' <"$cmdline" 2>/dev/null | grep -q -- '-m kafkalike\.broker\.main ' || continue
    their_log_dir=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^LOG_DIR=//p' | head -1)
    their_log_dir=$(cd "$their_log_dir" 2>/dev/null && pwd || echo "$their_log_dir")
    [ "$their_log_dir" = "$LOG_DIR" ] && pids+=("$pid")
done

if [ ${#pids[@]} -eq 0 ]; then
    echo "No kafka server to stop"
    exit 1
fi
kill -s "$SIGNAL" "${pids[@]}"
