"""examples/sensors end to end: both producers as the user runs them, the Spark job in the
run's shared session, and kcat (librdkafka) as the judge of what is on the broker."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.interop, pytest.mark.spark]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sensors"
LEVEL_PARTITION = {"critical": 0, "warning": 1, "info": 2}


def run_script(name: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"{name} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def kcat_records(bootstrap: str, topic: str) -> list[dict]:
    """Every record of the topic as kcat reads it: partition, offset, key and the parsed JSON value."""
    proc = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-J", "-q"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = []
    for line in proc.stdout.splitlines():
        message = json.loads(line)
        out.append({"partition": message["partition"], "offset": message["offset"], "key": message["key"],
                    "value": json.loads(message["payload"])})
    return out


def load_latest_status():
    spec = importlib.util.spec_from_file_location("sensors_latest_status", EXAMPLES / "latest_status.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def produced(broker):
    """Health events from two runs (the second one's are the latest) and one run of alerts."""
    bootstrap = broker.bootstrap
    first = run_script("produce_health.py", "--bootstrap-server", bootstrap, "--sensors", "6", "--rounds", "4",
                       "--seed", "11")
    second = run_script("produce_health.py", "--bootstrap-server", bootstrap, "--sensors", "5", "--rounds", "3",
                        "--seed", "12")
    alerts = run_script("produce_alerts.py", "--bootstrap-server", bootstrap, "--sensors", "6", "--alerts", "60",
                        "--seed", "13")
    return {"health_runs": [first, second], "alerts_run": alerts,
            "health": kcat_records(bootstrap, "sensor-health"), "alerts": kcat_records(bootstrap, "sensor-alerts")}


def test_producers_report_what_they_wrote(produced):
    assert produced["health_runs"][0].startswith("produced 24 health events for 6 sensors to sensor-health")
    assert produced["health_runs"][1].startswith("produced 15 health events for 5 sensors to sensor-health")
    assert len(produced["health"]) == 39
    assert produced["alerts_run"].startswith("produced 60 alerts to sensor-alerts")
    assert len(produced["alerts"]) == 60


def test_health_events_are_keyed_by_sensor(produced):
    partitions_of: dict[str, set[int]] = {}
    for record in produced["health"]:
        assert record["key"] == record["value"]["sensor_id"]
        assert set(record["value"]) == {"sensor_id", "temperature", "battery", "status", "timestamp"}
        partitions_of.setdefault(record["key"], set()).add(record["partition"])
    assert all(len(parts) == 1 for parts in partitions_of.values()), partitions_of


def test_alerts_land_on_the_partition_of_their_level(produced):
    seen_levels = set()
    for record in produced["alerts"]:
        level = record["value"]["level"]
        seen_levels.add(level)
        assert record["partition"] == LEVEL_PARTITION[level], record
        assert record["key"] == record["value"]["sensor_id"]
    assert seen_levels == set(LEVEL_PARTITION)
    # What the script printed is what the broker holds.
    for level, partition in LEVEL_PARTITION.items():
        count = sum(1 for r in produced["alerts"] if r["value"]["level"] == level)
        assert f"{level:<8} {count} on partition {partition}" in produced["alerts_run"]


def test_latest_status_joins_the_last_event_with_critical_counts(produced, broker, spark):
    latest_status = load_latest_status()
    rows = latest_status.main(spark, broker.bootstrap)

    # The judge's view: per sensor the last event by event time (then offset), as kcat read them.
    expected = {}
    for record in sorted(produced["health"], key=lambda r: (r["value"]["timestamp"], r["offset"])):
        expected[record["key"]] = record["value"]
    critical = {}
    for record in produced["alerts"]:
        if record["value"]["level"] == "critical":
            critical[record["key"]] = critical.get(record["key"], 0) + 1
    assert critical, "the seeded alerts include critical ones"

    assert [row.sensor_id for row in rows] == sorted(expected)
    for row in rows:
        event = expected[row.sensor_id]
        assert (row.status, row.temperature, row.battery, row.timestamp) == \
            (event["status"], event["temperature"], event["battery"], event["timestamp"]), row
        assert row.critical_alerts == critical.get(row.sensor_id, 0), row

    # Sensors 1-5 reported in the second run, whose events are the newest: their latest
    # status is the one that run printed last; sensor-06 keeps its first-run status.
    last_line = produced["health_runs"][1].splitlines()[-1]
    for sensor in [f"sensor-0{i}" for i in range(1, 6)]:
        assert f"{sensor}={expected[sensor]['status']}" in last_line

    table = latest_status.report(rows).splitlines()
    assert table[0].split()[:2] == ["sensor", "status"]
    assert len(table) == 1 + len(rows)
    for line, row in zip(table[1:], rows):
        fields = line.split()
        assert fields[:4] == [row.sensor_id, row.status, f"{row.temperature:.1f}", str(row.battery)]
        assert fields[-1] == str(row.critical_alerts)


def test_latest_status_command_line_help():
    out = run_script("latest_status.py", "--help")
    assert "--bootstrap-server" in out and "--master" in out
