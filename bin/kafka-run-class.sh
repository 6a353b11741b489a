#!/usr/bin/env bash
# kafka-run-class.sh [-daemon] [-name servicename] [-loggc] classname [opts]
# Kafka's main classes that operators call by name, run by the tool behind bin/ that is
# that class here; an unknown class fails as the JVM does (message, exit status 1).
base_dir="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"

if [ $# -lt 1 ]; then
    echo "USAGE: $0 [-daemon] [-name servicename] [-loggc] classname [opts]"
    exit 1
fi

daemon_mode=false
daemon_name=""
while [ $# -gt 0 ]; do
    case "$1" in
        -name) daemon_name="$2"; shift 2 ;;
        -loggc) shift ;;             # GC logs: there is no JVM to log
        -daemon) daemon_mode=true; shift ;;
        *) break ;;
    esac
done

class="$1"
shift
module=""
case "$class" in
    kafka.tools.GetOffsetShell) module=kafkalike.cli.get_offset_shell ;;
    kafka.Kafka) script=kafka-server-start.sh ;;
    kafka.admin.TopicCommand) script=kafka-topics.sh ;;
    kafka.admin.ConsumerGroupCommand) script=kafka-consumer-groups.sh ;;
    kafka.admin.ReassignPartitionsCommand) script=kafka-reassign-partitions.sh ;;
    kafka.admin.ConfigCommand) script=kafka-configs.sh ;;
    kafka.admin.LogDirsCommand) script=kafka-log-dirs.sh ;;
    kafka.admin.DeleteRecordsCommand) script=kafka-delete-records.sh ;;
    kafka.admin.BrokerApiVersionsCommand) script=kafka-broker-api-versions.sh ;;
    kafka.admin.LeaderElectionCommand) script=kafka-leader-election.sh ;;
    kafka.admin.PreferredReplicaLeaderElectionCommand) script=kafka-preferred-replica-election.sh ;;
    kafka.admin.FeatureCommand) script=kafka-features.sh ;;
    kafka.admin.ZkSecurityMigrator) script=zookeeper-security-migration.sh ;;
    kafka.tools.ClusterTool) script=kafka-cluster.sh ;;
    kafka.tools.DumpLogSegments) script=kafka-dump-log.sh ;;
    kafka.tools.ConsoleConsumer) script=kafka-console-consumer.sh ;;
    kafka.tools.ConsoleProducer) script=kafka-console-producer.sh ;;
    kafka.tools.ConsumerPerformance) script=kafka-consumer-perf-test.sh ;;
    kafka.tools.MirrorMaker) script=kafka-mirror-maker.sh ;;
    kafka.tools.ReplicaVerificationTool) script=kafka-replica-verification.sh ;;
    org.apache.kafka.tools.ProducerPerformance|kafka.tools.ProducerPerformance) script=kafka-producer-perf-test.sh ;;
    org.apache.kafka.tools.VerifiableProducer) script=kafka-verifiable-producer.sh ;;
    org.apache.kafka.tools.VerifiableConsumer) script=kafka-verifiable-consumer.sh ;;
    org.apache.zookeeper.server.quorum.QuorumPeerMain) script=zookeeper-server-start.sh ;;
    org.apache.zookeeper.ZooKeeperMainWithTlsSupportForKafka|org.apache.zookeeper.ZooKeeperMain)
        script=zookeeper-shell.sh
        if [ "${1:-}" = "-server" ]; then shift; fi ;;
    *) script="" ;;
esac

if [ -n "$module" ]; then       # a class Kafka 2.8 ships no script for: its module, run directly
    export PYTHONPATH="${base_dir}${PYTHONPATH:+:${PYTHONPATH}}"
    set -- -m "$module" "$@"
    script_path="${PYTHON:-python3}"
elif [ -n "$script" ] && [ -x "$base_dir/bin/$script" ]; then
    script_path="$base_dir/bin/$script"
else
    echo "Error: Could not find or load main class $class" >&2
    echo "Caused by: java.lang.ClassNotFoundException: $class" >&2
    exit 1
fi

if [ "$daemon_mode" = true ]; then
    log_dir="${LOG_DIR:-$base_dir/logs}"
    mkdir -p "$log_dir"
    nohup "$script_path" "$@" > "$log_dir/${daemon_name:-${class##*.}}.out" 2>&1 < /dev/null &
    exit 0
fi
exec "$script_path" "$@"
