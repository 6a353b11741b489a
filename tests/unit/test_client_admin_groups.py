"""AdminClient's group operations against fake brokers: routing to each group's
coordinator, waiting out a coordinator that moves or loads, merging every broker's
groups, and reading the answers (assignments, missing commits, per-group errors)."""
from __future__ import annotations

import pytest

from kafkalike.client.admin import AdminClient, KafkaAdminError, OffsetSpec
from kafkalike.client.groups import encode_assignment
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.delete_groups import DeleteGroupsResponse
from kafkalike.protocol.messages.describe_groups import DescribeGroupsResponse
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorResponse
from kafkalike.protocol.messages.list_groups import ListGroupsResponse
from kafkalike.protocol.messages.list_offsets import ListOffsetsResponse
from kafkalike.protocol.messages.offset_commit import OffsetCommitResponse
from kafkalike.protocol.messages.offset_fetch import OffsetFetchResponse
from kafkalike.protocol.messages.metadata import MetadataResponse
from tests.unit.test_client_connection import FakeBroker, fake  # noqa: F401 - the fake fixture

LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 2, 3, 8, 9, 10
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42


class Cluster:
    """Two fake brokers; broker 2 coordinates every group and leads every partition."""

    def __init__(self, fake) -> None:  # noqa: F811
        self.brokers: dict[int, FakeBroker] = {}
        self.coordinator_answers: list[ErrorCode] = []
        for node in (1, 2):
            self.brokers[node] = fake(handlers={METADATA: self.metadata, FIND_COORDINATOR: self.find})

    def metadata(self, body, version):
        topics = [MetadataResponse.MetadataResponseTopic(name=t.name, partitions=[
            MetadataResponse.MetadataResponsePartition(partition_index=p, leader_id=2, replica_nodes=[2],
                                                       isr_nodes=[2]) for p in range(2)])
            for t in body.topics or []]
        return MetadataResponse(brokers=[MetadataResponse.MetadataResponseBroker(node_id=i, host="127.0.0.1",
                                                                                 port=b.port)
                                         for i, b in self.brokers.items()], controller_id=1, topics=topics)

    def find(self, body, version):
        error = self.coordinator_answers.pop(0) if self.coordinator_answers else ErrorCode.NONE
        if error != ErrorCode.NONE:
            return FindCoordinatorResponse(error_code=int(error), node_id=-1, host="", port=-1)
        return FindCoordinatorResponse(node_id=2, host="127.0.0.1", port=self.brokers[2].port)


@pytest.fixture
def cluster(fake):  # noqa: F811 - the fixture imported above
    return Cluster(fake)


def admin_for(broker: FakeBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.address, "default.api.timeout.ms": 5000,
                        "retry.backoff.ms": 10})


def described(group: str, state: str = "Stable", error: ErrorCode = ErrorCode.NONE, protocol_type="consumer"):
    member = DescribeGroupsResponse.DescribedGroupMember(
        member_id="m-1", group_instance_id="pod-1", client_id="app", client_host="/10.0.0.7",
        member_metadata=b"", member_assignment=encode_assignment([("orders", 1), ("orders", 0)]))
    return DescribeGroupsResponse.DescribedGroup(error_code=int(error), group_id=group, group_state=state,
                                                 protocol_type=protocol_type, protocol_data="range",
                                                 members=[member])


def test_describe_waits_out_a_loading_coordinator_and_decodes_assignments(cluster):
    cluster.coordinator_answers = [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    answers = [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NONE]
    cluster.brokers[2].handlers[DESCRIBE_GROUPS] = lambda body, v: DescribeGroupsResponse(
        groups=[described(g, error=answers.pop(0)) for g in body.groups])
    with admin_for(cluster.brokers[1]) as admin:
        [description] = admin.describe_groups(["payments"]).values()
    assert (description.state, description.partition_assignor, description.coordinator.id) == ("Stable", "range", 2)
    [m] = description.members
    assert (m.member_id, m.group_instance_id, m.client_id, m.host) == ("m-1", "pod-1", "app", "/10.0.0.7")
    assert m.assignment == (("orders", 1), ("orders", 0))
    assert len(cluster.brokers[2].requests(DESCRIBE_GROUPS)) == 2
    assert cluster.brokers[1].requests(DESCRIBE_GROUPS) == []          # only the coordinator is asked


def test_other_protocols_keep_their_assignment_bytes_to_themselves(cluster):
    cluster.brokers[2].handlers[DESCRIBE_GROUPS] = lambda body, v: DescribeGroupsResponse(
        groups=[described(g, protocol_type="connect") for g in body.groups])
    with admin_for(cluster.brokers[1]) as admin:
        [description] = admin.describe_groups(["workers"]).values()
    assert not description.is_consumer_group and description.members[0].assignment == ()


def test_groups_of_every_broker_are_merged_and_filtered_by_state(cluster):
    def groups(*entries):
        return lambda body, v: ListGroupsResponse(groups=[
            ListGroupsResponse.ListedGroup(group_id=g, protocol_type=t, group_state=s)
            for g, t, s in entries if not body.states_filter or s in body.states_filter])
    cluster.brokers[1].handlers[LIST_GROUPS] = groups(("b", "consumer", "Stable"), ("c", "connect", "Stable"))
    cluster.brokers[2].handlers[LIST_GROUPS] = groups(("a", "", "Empty"))
    with admin_for(cluster.brokers[1]) as admin:
        listed = admin.list_groups()
        assert [(g.group_id, g.state, g.is_consumer_group) for g in listed] == [
            ("a", "Empty", True), ("b", "Stable", True), ("c", "Stable", False)]
        assert [g.group_id for g in admin.list_groups(["Empty"])] == ["a"]


def test_offsets_without_a_commit_are_left_out(cluster):
    part = OffsetFetchResponse.OffsetFetchResponsePartition
    cluster.brokers[2].handlers[OFFSET_FETCH] = lambda body, v: OffsetFetchResponse(topics=[
        OffsetFetchResponse.OffsetFetchResponseTopic(name="orders", partitions=[
            part(partition_index=0, committed_offset=42, committed_leader_epoch=3, metadata="m"),
            part(partition_index=1, committed_offset=-1, metadata="")])])
    with admin_for(cluster.brokers[1]) as admin:
        found = admin.list_group_offsets("payments")
    assert {tp: (o.offset, o.leader_epoch, o.metadata) for tp, o in found.items()} == {("orders", 0): (42, 3, "m")}
    assert cluster.brokers[2].requests(OFFSET_FETCH)[0].body.topics is None      # all of the group's offsets


def test_altering_offsets_commits_outside_the_group_and_reports_the_refusal(cluster):
    def refuse(body, v):
        return OffsetCommitResponse(topics=[OffsetCommitResponse.OffsetCommitResponseTopic(name=t.name, partitions=[
            OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                               error_code=int(ErrorCode.UNKNOWN_MEMBER_ID))
            for p in t.partitions]) for t in body.topics])
    cluster.brokers[2].handlers[OFFSET_COMMIT] = refuse
    with admin_for(cluster.brokers[1]) as admin, pytest.raises(KafkaAdminError) as failure:
        admin.alter_group_offsets("payments", {("orders", 0): 5})
    assert failure.value.java_class == "org.apache.kafka.common.errors.UnknownMemberIdException"
    sent = cluster.brokers[2].requests(OFFSET_COMMIT)[0].body
    assert (sent.generation_id, sent.member_id, sent.group_instance_id) == (-1, "", None)
    assert sent.topics[0].partitions[0].committed_offset == 5


def test_each_group_deletion_has_its_own_outcome(cluster):
    cluster.brokers[2].handlers[DELETE_GROUPS] = lambda body, v: DeleteGroupsResponse(results=[
        DeleteGroupsResponse.DeletableGroupResult(
            group_id=g, error_code=int(ErrorCode.NON_EMPTY_GROUP if g == "busy" else ErrorCode.NONE))
        for g in body.groups_names])
    with admin_for(cluster.brokers[1]) as admin:
        results = admin.delete_groups(["idle", "busy"])
    assert results["idle"] is None
    assert (results["busy"].code, results["busy"].message) == (ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")


def test_list_offsets_asks_the_leader_again_after_not_leader(cluster):
    answers = [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NONE]

    def offsets(body, v):
        error = answers.pop(0)
        return ListOffsetsResponse(topics=[ListOffsetsResponse.ListOffsetsTopicResponse(name=t.name, partitions=[
            ListOffsetsResponse.ListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=int(error),
                offset=100 if p.timestamp == -1 else 7, timestamp=-1, leader_epoch=4)
            for p in t.partitions]) for t in body.topics])
    cluster.brokers[2].handlers[LIST_OFFSETS] = offsets
    with admin_for(cluster.brokers[1]) as admin:
        found = admin.list_offsets({("orders", 0): OffsetSpec.latest(), ("orders", 1): OffsetSpec.earliest()})
    assert {tp: (o.offset, o.leader_epoch) for tp, o in found.items()} == {("orders", 0): (100, 4),
                                                                         ("orders", 1): (7, 4)}
    sent = cluster.brokers[2].requests(LIST_OFFSETS)[-1].body
    assert sent.replica_id == -1 and [p.timestamp for p in sent.topics[0].partitions] == [-1, -2]


def _latest_by_isolation(body, v):
    """A leader with an open transaction: the high watermark is 100, the last stable offset 60."""
    return ListOffsetsResponse(topics=[ListOffsetsResponse.ListOffsetsTopicResponse(name=t.name, partitions=[
        ListOffsetsResponse.ListOffsetsPartitionResponse(
            partition_index=p.partition_index, offset=60 if body.isolation_level == 1 else 100, timestamp=-1)
        for p in t.partitions]) for t in body.topics])


def test_list_offsets_asks_with_the_isolation_level_it_is_given(cluster):
    """Java's ListOffsetsOptions(isolationLevel): read_committed's latest is the last stable offset."""
    cluster.brokers[2].handlers[LIST_OFFSETS] = _latest_by_isolation
    with admin_for(cluster.brokers[1]) as admin:
        default = admin.list_offsets({("orders", 0): OffsetSpec.latest()})
        committed = admin.list_offsets({("orders", 0): OffsetSpec.latest()}, isolation_level="read_committed")
        uncommitted = admin.list_offsets({("orders", 0): OffsetSpec.latest()}, isolation_level="READ_UNCOMMITTED")
        with pytest.raises(ValueError, match="read_uncommitted, read_committed"):
            admin.list_offsets({("orders", 0): OffsetSpec.latest()}, isolation_level="committed")
    assert [found[("orders", 0)].offset for found in (default, committed, uncommitted)] == [100, 60, 100]
    assert [seen.body.isolation_level for seen in cluster.brokers[2].requests(LIST_OFFSETS)] == [0, 1, 0]


def test_read_committed_offsets_need_list_offsets_v2(cluster):
    cluster.brokers[2].handlers[LIST_OFFSETS] = _latest_by_isolation
    cluster.brokers[2].versions[LIST_OFFSETS] = (0, 1)
    with admin_for(cluster.brokers[1]) as admin:
        assert admin.list_offsets({("orders", 0): OffsetSpec.latest()})[("orders", 0)].offset == 100
        with pytest.raises(KafkaAdminError) as raised:
            admin.list_offsets({("orders", 0): OffsetSpec.latest()}, isolation_level="read_committed")
    assert raised.value.code == ErrorCode.UNSUPPORTED_VERSION and "read_committed" in raised.value.message
