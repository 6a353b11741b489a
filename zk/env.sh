# shellcheck shell=bash disable=SC2034
# Sourced by bin/zookeeper-*.sh, zk/install.sh and scripts/start.sh: how to run Debian's
# ZooKeeper 3.8 jars.
#
# zookeeper.jar's manifest lists every library the server and ZooKeeperMain need except a
# logging backend; slf4j-simple prints ZooKeeper's log lines to stderr, where the bin
# scripts send them (the console, or logs/zookeeper.out with -daemon).

ZK_MAIN_CLASS=org.apache.zookeeper.server.quorum.QuorumPeerMain
ZK_SHELL_CLASS=org.apache.zookeeper.ZooKeeperMain
ZK_JARS=(/usr/share/java/zookeeper.jar /usr/share/java/slf4j-simple.jar)

# Prints the java binary ($JAVA_HOME first, as Kafka's scripts do) or fails with a hint.
zk_java() {
    if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
        echo "$JAVA_HOME/bin/java"
    elif command -v java >/dev/null 2>&1; then
        command -v java
    else
        echo "No java found (set JAVA_HOME or run zk/install.sh)" >&2
        return 1
    fi
}

# Prints the classpath for the server and the shell, or fails if the package is missing.
zk_classpath() {
    local jar
    for jar in "${ZK_JARS[@]}"; do
        if [ ! -f "$jar" ]; then
            echo "ZooKeeper is not installed ($jar is missing): run zk/install.sh" >&2
            return 1
        fi
    done
    local IFS=:
    echo "${ZK_JARS[*]}"
}

# Succeeds when PID is a live (not zombie) ZooKeeper server process.
zk_is_server_pid() {
    local pid=$1
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != "Z" ] || return 1
    tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF "$ZK_MAIN_CLASS"
}

# Prints the server's Mode (standalone, leader, follower) from the srvr four-letter word;
# fails when nothing answers or the server does not serve yet.
zk_mode() {
    local host=$1 port=$2 answer
    # shellcheck disable=SC2016  # expanded by the inner bash
    answer=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2" && printf srvr >&3 && cat <&3' _ "$host" "$port" 2>/dev/null) || return 1
    sed -n 's/^Mode: //p' <<<"$answer" | grep . 
}

# Waits up to SECONDS (default 30) for zk_mode to succeed; prints the mode.
zk_wait_serving() {
    local host=$1 port=$2 seconds=${3:-30} i
    for ((i = 0; i < seconds * 10; i++)); do
        zk_mode "$host" "$port" && return 0
        sleep 0.1
    done
    echo "ZooKeeper at $host:$port is not serving after ${seconds}s" >&2
    return 1
}
