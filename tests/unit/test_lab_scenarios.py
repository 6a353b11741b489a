"""The scenario table's verdicts and which lab each scenario needs, without a cluster."""
from __future__ import annotations

from kafkalike.lab.judge import judge
from kafkalike.lab.scenarios import EXPECTED_LOSS, FAIL, PASS, SCENARIOS, Outcome, runs_on, unmet_needs


def _outcome(lost: int, loss_allowed: bool, error: str | None = None) -> Outcome:
    producer = [{"name": "producer_send_success", "value": str(v), "partition": 0, "offset": v} for v in range(10)]
    consumer = [{"name": "record_data", "value": str(v), "partition": 0, "offset": v} for v in range(lost, 10)]
    return Outcome("x", "t", 1.0, judge(producer, consumer), error, loss_allowed=loss_allowed)


def test_kafkas_replication_matrix_has_guessable_names():
    for role in ("leader", "controller"):
        for fault in ("clean-shutdown", "kill", "bounce"):
            assert f"{role}-{fault}" in SCENARIOS
    for name in ("zk-leader-kill", "zk-session-expiry", "unclean-leader-election", "rolling-restart",
                 "partition-leader"):
        assert name in SCENARIOS


def test_loss_fails_except_where_the_scenario_allows_it():
    assert _outcome(0, False).verdict == PASS
    assert _outcome(3, False).verdict == FAIL and not _outcome(3, False).passed
    allowed = _outcome(3, True)
    assert allowed.verdict == EXPECTED_LOSS and allowed.passed
    assert _outcome(0, True).verdict == PASS
    # A scenario that could not run to its end fails whatever it lost.
    assert _outcome(0, True, error="timed out").verdict == FAIL


def test_duplicates_and_reorderings_fail_every_scenario_the_unclean_one_too():
    producer = [{"name": "producer_send_success", "value": str(v), "partition": 0, "offset": v} for v in range(10)]
    read = [{"name": "record_data", "value": str(v), "partition": 0, "offset": v} for v in range(10)]
    copy = [*read, {"name": "record_data", "value": "4", "partition": 0, "offset": 10}]
    swapped = [{**r, "value": str({3: 4, 4: 3}.get(v, v))} for v, r in enumerate(read)]
    lost_and_copied = [*read[2:], {"name": "record_data", "value": "4", "partition": 1, "offset": 0}]
    for consumer in (copy, swapped, lost_and_copied):
        for loss_allowed in (False, True):
            outcome = Outcome("x", "t", 1.0, judge(producer, consumer), loss_allowed=loss_allowed)
            assert outcome.verdict == FAIL and not outcome.passed, (consumer, loss_allowed)


def test_only_the_unclean_scenario_may_lose_records():
    assert [n for n, s in SCENARIOS.items() if s.loss_allowed] == ["unclean-leader-election"]


def test_needs_name_the_backend_or_the_ensemble():
    assert "--backend netns or docker" in unmet_needs(SCENARIOS["partition-leader"], "local", "ensemble")
    assert "up --zookeeper ensemble" in unmet_needs(SCENARIOS["zk-leader-kill"], "local", "standalone")
    assert runs_on(SCENARIOS["zk-leader-kill"], "docker", "ensemble")
    assert runs_on(SCENARIOS["leader-bounce"], "local", "standalone")
