#!/usr/bin/env bash
# Provision one lab node on a Debian 12 VM (run by vagrant/Vagrantfile, as root):
#   vagrant/provision.sh ROLE [python3 -m kafkalike.lab.provision ROLE's options]
# ROLE is zookeeper, broker, spark-master or spark-worker. Installs what the role needs
# with the checkout's own installers (Java and ZooKeeper through zk/install.sh; the
# kafkalike package, plus pyspark for the Spark roles), renders the node's files with
# kafkalike.lab.provision (the code every lab backend uses), then enables and starts
# its systemd unit: it restarts on failure and starts again on boot.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/scripts/lib/apt.sh"
if [ $# -lt 1 ]; then
    echo "usage: $0 zookeeper|broker|spark-master|spark-worker [options]" >&2
    exit 2
fi
role=$1
shift

bash "$repo/zk/install.sh"          # Java 17 for every role; ZooKeeper's jars
apt_install_missing python3-pip
extras=()
case "$role" in
    spark-*) extras=(spark) ;;
esac
if ! python3 "$repo/scripts/pydeps_satisfied.py" "$repo" ${extras[@]+"${extras[@]}"}; then
    target=$repo
    [ ${#extras[@]} -eq 0 ] || target="${repo}[spark]"
    python3 -m pip install --root-user-action=ignore --break-system-packages -e "$target"
fi

python3 -m kafkalike.lab.provision "$role" "$@"
systemctl daemon-reload
systemctl enable --now "kafkalike-${role}.service"
systemctl --no-pager --lines=0 status "kafkalike-${role}.service"
