#!/usr/bin/env bash
# Install Debian's ZooKeeper (package zookeeper, 3.8) and a Java runtime, each only when
# missing. No service is started: zk/start-*.sh and bin/zookeeper-server-start.sh run it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../scripts/lib/apt.sh
. "$here/../scripts/lib/apt.sh"
# shellcheck source=env.sh
. "$here/env.sh"

packages=(zookeeper)
if [ -z "${JAVA_HOME:-}" ] && ! command -v java >/dev/null 2>&1; then
    packages+=(default-jre-headless)
fi
apt_install_missing "${packages[@]}"

# Fail here, not in the first test, if the jars the scripts run are not where we expect.
zk_java >/dev/null
zk_classpath >/dev/null
