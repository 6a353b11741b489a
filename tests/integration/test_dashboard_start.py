"""scripts/wait-for-dashboard.sh, which scripts/start.sh runs after starting the dashboard
in the background: it prints the address the dashboard actually serves, once it answers
there, and fails with the dashboard's own output when it could not start (a taken port).

The dashboard needs no cluster to serve its pages (they show that the cluster cannot be
read), so these start it against an address where nothing listens.
"""
from __future__ import annotations

import re
import subprocess
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WAIT = ROOT / "scripts" / "wait-for-dashboard.sh"
NOWHERE = "127.0.0.1:1"


def start_dashboard(out: Path, port: int) -> subprocess.Popen:
    """As start.sh starts it: in the background, stdout and stderr into one file."""
    with open(out, "wb") as sink:
        return subprocess.Popen([str(ROOT / "bin" / "kafkalike-dashboard.sh"), "--bootstrap-server", NOWHERE,
                                 "--port", str(port)], stdout=sink, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)


def wait_for(proc: subprocess.Popen, out: Path, seconds: int = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(WAIT), str(proc.pid), str(out), str(seconds)], capture_output=True, text=True,
                          timeout=seconds + 30)


def test_the_address_printed_is_the_one_served_and_a_taken_port_fails_clearly(tmp_path):
    first_out, second_out = tmp_path / "first.out", tmp_path / "second.out"
    first = start_dashboard(first_out, 0)            # any free port: only the dashboard knows which
    second = None
    try:
        done = wait_for(first, first_out)
        assert done.returncode == 0, done.stderr
        url = done.stdout.strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url), done.stdout
        assert not url.endswith(":0/")
        with urllib.request.urlopen(url, timeout=10) as page:
            assert b"kafkalike" in page.read()

        port = int(url.rsplit(":", 1)[1].rstrip("/"))
        second = start_dashboard(second_out, port)   # the same port again: taken
        done = wait_for(second, second_out)
        assert done.returncode == 1 and done.stdout == ""
        assert f"The dashboard (pid {second.pid}) stopped before it served anything." in done.stderr
        assert f"Cannot listen on 127.0.0.1:{port}" in done.stderr, done.stderr
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.terminate()
                proc.wait(10)


def test_a_dashboard_that_is_gone_is_reported(tmp_path):
    out = tmp_path / "dashboard.out"
    out.write_text("")
    gone = subprocess.Popen(["true"])
    gone.wait()
    done = subprocess.run([str(WAIT), str(gone.pid), str(out), "5"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert done.stderr.startswith(f"The dashboard (pid {gone.pid}) stopped before it served anything. Its output")
