#!/usr/bin/env bash
# A ZooKeeper command line client, like Kafka's: with only host:port[/chroot] it is
# interactive; with a command after it (ls /, get /path, create /path data, ...) it runs
# that one command and exits. Both wrap ZooKeeper's own ZooKeeperMain, so prompts,
# answers and exit codes are ZooKeeper's. Log lines go to stderr at WARN, as in Kafka.
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "USAGE: $0 zookeeper_host:port[/path] [-zk-tls-config-file file] [args...]"
    exit 1
fi

base_dir=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
. "$base_dir/zk/env.sh"

server=$1
shift
if [ "${1:-}" = "-zk-tls-config-file" ]; then
    echo "-zk-tls-config-file is not supported yet: kafkalike talks to ZooKeeper in plaintext" >&2
    exit 1
fi

java=$(zk_java)
classpath=$(zk_classpath)
# shellcheck disable=SC2206
heap_opts=(${KAFKA_HEAP_OPTS:--Xmx256M})
# shellcheck disable=SC2206
extra_opts=(${KAFKA_OPTS:-})

# ZooKeeper 3.8 logs "Exiting JVM with code N" at ERROR on every exit; Kafka's (3.5) did not.
exec "$java" "${heap_opts[@]}" \
    -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.util.ServiceUtils=off \
    ${extra_opts[@]+"${extra_opts[@]}"} \
    -cp "$classpath" "$ZK_SHELL_CLASS" -server "$server" "$@"
