"""The tables kafka-consumer-groups prints, padded exactly as Kafka 2.8 pads them.

Scripts cut these columns apart, so widths follow ConsumerGroupCommand: most columns
are left-justified to a fixed width, the ones holding names (group, topic, consumer id,
host, client id) widen to their longest value but never below 15, a missing value is
"-", and header lines start with an empty line. Some lines end in padding; that is
Kafka's output too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from kafkalike.client.groups import CoordinatorNode, TopicPartition

MISSING = "-"
MIN_WIDTH = 15


@dataclass(frozen=True)
class OffsetRow:
    """One line of the offsets table (Kafka's PartitionAssignmentState)."""

    group: str
    topic: str | None
    partition: int | None
    offset: int | None
    log_end_offset: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None

    @property
    def lag(self) -> int | None:
        """End minus committed; unknown without a commit or an end (-1 means no commit)."""
        if self.offset is None or self.offset == -1 or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.offset


@dataclass(frozen=True)
class MemberRow:
    group: str
    consumer_id: str
    group_instance_id: str
    host: str
    client_id: str
    num_partitions: int
    assignment: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class StateRow:
    group: str
    coordinator: CoordinatorNode
    assignment_strategy: str
    state: str
    num_members: int


def _cell(value: object) -> str:
    return MISSING if value is None else str(value)


def _width(values: Iterable[str], floor: int = MIN_WIDTH) -> int:
    return max([floor, *(len(v) for v in values)])


def offsets_table(rows: Sequence[OffsetRow]) -> str:
    """GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID."""
    g = _width(r.group for r in rows)
    t = _width(_cell(r.topic) for r in rows)
    c = _width(_cell(r.consumer_id) for r in rows)
    h = _width(_cell(r.host) for r in rows)

    def line(*cells: object) -> str:
        values = [_cell(x) for x in cells]
        return (f"{values[0]:<{g}} {values[1]:<{t}} {values[2]:<10} {values[3]:<15} {values[4]:<15} "
                f"{values[5]:<15} {values[6]:<{c}} {values[7]:<{h}} {values[8]}\n")

    out = "\n" + line("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                      "HOST", "CLIENT-ID")
    for r in rows:
        out += line(r.group, r.topic, r.partition, r.offset, r.log_end_offset, r.lag, r.consumer_id, r.host,
                    r.client_id)
    return out


def assignment_text(assignment: Iterable[TopicPartition]) -> str:
    """"t1(0,2), t2(1)": partitions sorted within a topic, topics' strings sorted; "-" if none."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assignment:
        by_topic.setdefault(topic, []).append(partition)
    if not by_topic:
        return MISSING
    return ", ".join(sorted(f"{topic}({','.join(str(p) for p in sorted(ps))})" for topic, ps in by_topic.items()))


def members_table(rows: Sequence[MemberRow], verbose: bool) -> str:
    """GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS [ASSIGNMENT]; the instance id
    column only when some member is static."""
    g = _width(r.group for r in rows)
    c = _width(r.consumer_id for r in rows)
    i = _width((r.group_instance_id for r in rows), 17)
    h = _width(r.host for r in rows)
    cl = _width(r.client_id for r in rows)
    static = any(r.group_instance_id for r in rows)

    def line(group, consumer, instance, host, client, count, tail) -> str:
        text = f"{group:<{g}} {consumer:<{c}} "
        if static:
            text += f"{instance:<{i}} "
        return text + f"{host:<{h}} {client:<{cl}} {count!s:<15} {tail}\n"

    out = "\n" + line("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                      "ASSIGNMENT" if verbose else "")
    for r in rows:
        out += line(r.group, r.consumer_id, r.group_instance_id, r.host, r.client_id, r.num_partitions,
                    assignment_text(r.assignment) if verbose else "")
    return out


def state_table(row: StateRow) -> str:
    """GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS. Kafka 2.8 sizes the GROUP
    column by the coordinator's text and the coordinator column at 25; kept as it is."""
    coordinator = f"{row.coordinator.host}:{row.coordinator.port} ({row.coordinator.id_string})"
    w = max(25, len(coordinator))

    def line(*cells: object) -> str:
        return f"\n{cells[0]!s:<{w}} {cells[1]!s:<25} {cells[2]!s:<20} {cells[3]!s:<15} {cells[4]}"

    return (line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
            + line(row.group, coordinator, row.assignment_strategy, row.state, row.num_members) + "\n")


def group_states_table(groups: Sequence[tuple[str, str]]) -> str:
    """--list --state: GROUP STATE, without a leading empty line."""
    w = _width(g for g, _ in groups)
    return "".join(f"{group:<{w}} {state}\n" for group, state in [("GROUP", "STATE"), *groups])


def reset_table(plan: Mapping[str, Mapping[TopicPartition, int]]) -> str:
    """GROUP TOPIC PARTITION NEW-OFFSET; printed whenever some group was asked about, even
    if nothing of it is reset (Kafka prints the header then too)."""
    if not plan:
        return ""
    out = "\n" + f"{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} {'NEW-OFFSET':<15}\n"
    for group, offsets in plan.items():
        for (topic, partition), offset in offsets.items():
            out += f"{group:<30} {topic:<30} {partition!s:<10} {offset!s:<15}\n"
    return out


def reset_csv(plan: Mapping[str, Mapping[TopicPartition, int]], with_group: bool) -> str:
    """--export: "topic,partition,offset" lines, with the group in front when several were asked for."""
    lines = []
    for group, offsets in plan.items():
        for (topic, partition), offset in offsets.items():
            fields = [group, topic, str(partition), str(offset)] if with_group else [topic, str(partition),
                                                                                  str(offset)]
            lines.append(",".join(_csv_field(f) for f in fields) + "\n")
    return "".join(lines)


def _csv_field(text: str) -> str:
    if any(ch in text for ch in ',"\n\r') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


def delete_offsets_table(results: Mapping[TopicPartition, str | None]) -> str:
    """TOPIC PARTITION STATUS, sorted as Kafka sorts it (topic and partition glued as a string);
    partition -1 stands for a topic that could not be described."""
    out = "\n" + f"{'TOPIC':<30} {'PARTITION':<15} {'STATUS':<15}\n"
    for (topic, partition), error in sorted(results.items(), key=lambda item: item[0][0] + str(item[0][1])):
        where = str(partition) if partition >= 0 else "Not Provided"
        status = "Successful" if error is None else f"Error: {error}"
        out += f"{topic:<30} {where:<15} {status:<15}\n"
    return out


__all__ = ["MISSING", "MemberRow", "OffsetRow", "StateRow", "assignment_text", "delete_offsets_table",
           "group_states_table", "members_table", "offsets_table", "reset_csv", "reset_table", "state_table"]
