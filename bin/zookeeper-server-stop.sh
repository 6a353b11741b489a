#!/usr/bin/env bash
# Stop the ZooKeeper server(s) that bin/zookeeper-server-start.sh started with the same
# LOG_DIR: send SIGTERM (or $SIGNAL, as Kafka's script allows) and wait for them to exit.
# Prints "No zookeeper server to stop" and exits 1 when there is none, like Kafka's.
set -euo pipefail

base_dir=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
. "$base_dir/zk/env.sh"

SIGNAL=${SIGNAL:-TERM}
LOG_DIR=${LOG_DIR:-$base_dir/logs}
LOG_DIR=$(cd "$LOG_DIR" 2>/dev/null && pwd || echo "$LOG_DIR")
pid_file=$LOG_DIR/zookeeper.pid
marker="-Dkafkalike.zookeeper.logdir=$LOG_DIR"

pids=()
if [ -f "$pid_file" ] && zk_is_server_pid "$(cat "$pid_file")"; then
    pids+=("$(cat "$pid_file")")
fi
# A server started in the foreground in another terminal, or whose pid file is gone.
for cmdline in /proc/[0-9]*/cmdline; do
    pid=${cmdline#/proc/}
    pid=${pid%/cmdline}
    if [[ " ${pids[*]:-} " != *" $pid "* ]] && zk_is_server_pid "$pid" \
        && tr '\0' '\n' <"$cmdline" 2>/dev/null | grep -qxF -- "$marker"; then
        pids+=("$pid")
    fi
done

if [ ${#pids[@]} -eq 0 ]; then
    echo "No zookeeper server to stop"
    exit 1
fi

kill -s "$SIGNAL" "${pids[@]}"

# Wait, so that a start right after this finds the port free.
for _ in $(seq 1 300); do
    alive=()
    for pid in "${pids[@]}"; do
        zk_is_server_pid "$pid" && alive+=("$pid")
    done
    [ ${#alive[@]} -eq 0 ] && break
    sleep 0.1
done
if [ ${#alive[@]} -gt 0 ]; then
    echo "ZooKeeper still running after 30s: pid ${alive[*]}" >&2
    exit 1
fi
rm -f "$pid_file"
