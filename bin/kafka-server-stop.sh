#!/usr/bin/env bash
# Stop kafkalike brokers with SIGTERM (a clean shutdown), as Kafka's script does.
# Without arguments it stops every kafkalike broker on this machine, like Kafka 2.8's.
pids=$(pgrep -f 'kafkalike\.broker\.main' || true)
if [ -z "$pids" ]; then
    echo "No kafka server to stop"
    exit 1
fi
kill -s TERM $pids
