#!/usr/bin/env bash
# wait-for-dashboard.sh PID OUTPUT [SECONDS]
#
# For a dashboard (bin/kafkalike-dashboard.sh) started in the background as PID with its
# output going to the file OUTPUT: wait until it says where it serves (its first line,
# "kafkalike dashboard on http://HOST:PORT/ ...") and that address answers, then print
# the address. If the process ends first (a port already taken, a bad option) or nothing
# answers within SECONDS (default 30), say so on stderr with the dashboard's output and
# exit 1. scripts/start.sh uses it, so the address it prints is one that answers.
set -u
if [ $# -lt 2 ]; then
    echo "usage: $0 PID OUTPUT [SECONDS]" >&2
    exit 2
fi
pid=$1
out=$2
limit=${3:-30}
PYTHON=${PYTHON:-python3}

# Running, and not a zombie (a process that ended but whose parent has not reaped it).
alive() {
    kill -0 "$pid" 2>/dev/null || return 1
    local state
    state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
    [ "$state" != "Z" ]
}

failed() {
    echo "The dashboard (pid $pid) $1. Its output ($out):" >&2
    sed 's/^/  /' "$out" >&2 2>/dev/null || true
    exit 1
}

deadline=$((SECONDS + limit))
url=""
while [ -z "$url" ]; do
    url=$(sed -n 's|^kafkalike dashboard on \(https\{0,1\}://[^ ]*\) .*|\1|p' "$out" 2>/dev/null | head -n 1)
    [ -n "$url" ] && break
    alive || failed "stopped before it served anything"
    [ "$SECONDS" -lt "$deadline" ] || failed "did not say where it serves within ${limit} s"
    sleep 0.2
done

# The address it printed must answer (the pages are served from the last look, so they
# answer at once, even before the cluster has been read).
while ! "$PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5).read()' \
        "$url" 2>/dev/null; do
    alive || failed "stopped after saying it serves $url"
    [ "$SECONDS" -lt "$deadline" ] || failed "does not answer on $url after ${limit} s"
    sleep 0.2
done
echo "$url"
