"""The Spark connector's option rules and task split, without Spark or a broker.

`source_options`/`sink_options` must accept and refuse exactly what Spark's
KafkaSourceProvider does, with a message naming the option; `split_ranges` must cut
offset ranges into tasks as Spark's KafkaOffsetRangeCalculator does (minPartitions,
maxRecordsPerPartition), since the number of tasks is what a user sees.
"""
from __future__ import annotations

import pytest

from kafkalike.spark.options import (EARLIEST, LATEST, KafkaOptionError, OffsetLimit, parse_partition_numbers,
                                     parse_partitions, sink_options, source_options)
from kafkalike.spark.planner import OffsetRange, split_ranges

BS = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def batch(**options):
    return source_options({**BS, **options}, streaming=False)


def stream(**options):
    return source_options({**BS, **options}, streaming=True)


def refused(options: dict, *, streaming: bool = False) -> str:
    with pytest.raises(KafkaOptionError) as info:
        source_options(options, streaming=streaming)
    return str(info.value)


# -- topics: exactly one of assign / subscribe / subscribePattern --------------------------------

def test_subscribe_splits_and_trims_a_topic_list():
    opts = batch(subscribe=" a, b ,,c ")
    assert opts.subscription.strategy == "subscribe"
    assert opts.subscription.topics == ("a", "b", "c")


def test_option_names_are_case_insensitive_as_in_spark():
    # PySpark hands a data source its options with lower-cased names; Kafka's own
    # setting names are lower case, so the client gets them as Kafka spells them.
    opts = source_options({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "SubscribePattern": "t-.*",
                           "STARTINGOFFSETS": "earliest", "FailOnDataLoss": "FALSE"}, streaming=False)
    assert opts.subscription.strategy == "subscribepattern" and opts.subscription.pattern == "t-.*"
    assert opts.bootstrap_servers == "h:1"
    assert opts.fail_on_data_loss is False


def test_assign_parses_spark_json():
    opts = batch(assign='{"a":[0,2],"b":[1]}')
    assert opts.subscription.strategy == "assign"
    assert set(opts.subscription.partitions) == {("a", 0), ("a", 2), ("b", 1)}


def test_no_topic_option_is_refused():
    message = refused(BS)
    assert message == ("One of the following options must be specified for Kafka source: subscribe, "
                       "subscribepattern, assign. See the docs for more details.")


@pytest.mark.parametrize("extra", [{"assign": '{"t":[0]}'}, {"subscribePattern": "t.*"}])
def test_two_topic_options_are_refused(extra):
    message = refused({**BS, "subscribe": "t", **extra})
    assert message.startswith("Only one of the following options can be specified for Kafka source")
    assert "subscribe, subscribepattern, assign" in message


@pytest.mark.parametrize("options, named", [
    ({"subscribe": " , "}, "'subscribe'"),
    ({"subscribePattern": "  "}, "'subscribePattern'"),
    ({"assign": "t-0"}, "'assign'"),
])
def test_empty_or_non_json_topic_values_are_refused(options, named):
    assert named in refused({**BS, **options})


@pytest.mark.parametrize("text", ['{"t":[0,"1"]}', '{"t":0}', '["t"]', '{"t":[0]', '{"t":[true]}'])
def test_malformed_assign_json_is_refused_with_spark_example(text):
    with pytest.raises(KafkaOptionError) as info:
        parse_partitions(text)
    assert str(info.value) == f'Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {text}'
    assert text in refused({**BS, "assign": text})


# -- kafka.* options ------------------------------------------------------------------------------

def test_kafka_prefixed_options_go_to_the_client_without_the_prefix():
    opts = batch(subscribe="t", **{"kafka.max.partition.fetch.bytes": "512", "kafka.client.id": "me",
                                   "minPartitions": "3"})
    assert opts.client_config == {"bootstrap.servers": "127.0.0.1:9092", "max.partition.fetch.bytes": "512",
                                  "client.id": "me"}


def test_missing_bootstrap_servers_is_refused_for_source_and_sink():
    assert refused({"subscribe": "t"}) == ("Option 'kafka.bootstrap.servers' must be specified for configuring "
                                           "Kafka consumer")
    with pytest.raises(KafkaOptionError, match="'kafka.bootstrap.servers' must be specified for configuring Kafka "
                                               "producer"):
        sink_options({"topic": "t"})


@pytest.mark.parametrize("key", ["auto.offset.reset", "key.deserializer", "value.deserializer",
                                 "enable.auto.commit", "interceptor.classes"])
def test_consumer_settings_spark_owns_are_refused(key):
    message = refused({**BS, "subscribe": "t", f"kafka.{key}": "x"})
    assert f"Kafka option '{key}' is not supported" in message


def test_auto_offset_reset_message_points_to_starting_offsets():
    message = refused({**BS, "subscribe": "t", "kafka.auto.offset.reset": "earliest"})
    assert "startingoffsets" in message and "'earliest' or 'latest'" in message


@pytest.mark.parametrize("key", ["key.serializer", "value.serializer"])
def test_sink_refuses_serializers(key):
    with pytest.raises(KafkaOptionError, match=f"Kafka option '{key}' is not supported"):
        sink_options({**BS, f"kafka.{key}": "x"})


def test_sink_topic_option_is_trimmed_and_optional():
    assert sink_options({**BS, "topic": " out "}).topic == "out"
    assert sink_options(BS).topic is None
    assert sink_options({**BS, "kafka.acks": "1"}).client_config == {"bootstrap.servers": "127.0.0.1:9092",
                                                                      "acks": "1"}


# -- starting and ending offsets ------------------------------------------------------------------

def test_batch_defaults_are_earliest_to_latest_and_stream_starts_at_latest():
    opts = batch(subscribe="t")
    assert (opts.starting.kind, opts.ending.kind) == ("earliest", "latest")
    assert stream(subscribe="t").starting.kind == "latest"


def test_offsets_json_keeps_minus_two_and_minus_one():
    opts = batch(subscribe="t", startingOffsets='{"t":{"0":-2,"1":5}}', endingOffsets='{"t":{"0":-1,"1":9}}')
    assert opts.starting == OffsetLimit("offsets", partition_offsets={("t", 0): EARLIEST, ("t", 1): 5})
    assert opts.ending == OffsetLimit("offsets", partition_offsets={("t", 0): LATEST, ("t", 1): 9})


def test_earliest_and_latest_words_are_case_insensitive():
    opts = batch(subscribe="t", startingOffsets=" EARLIEST ", endingOffsets="Latest")
    assert (opts.starting.kind, opts.ending.kind) == ("earliest", "latest")


def test_latest_as_batch_start_is_refused():
    assert refused({**BS, "subscribe": "t", "startingOffsets": "latest"}) == \
        "starting offset can't be latest for batch queries on Kafka"
    assert "can't be latest for batch queries" in refused(
        {**BS, "subscribe": "t", "startingOffsets": '{"t":{"0":-1}}'})


def test_earliest_as_batch_end_is_refused():
    assert refused({**BS, "subscribe": "t", "endingOffsets": "earliest"}) == \
        "ending offset can't be earliest for batch queries on Kafka"
    assert "can't be earliest for batch queries" in refused(
        {**BS, "subscribe": "t", "endingOffsets": '{"t":{"0":-2}}'})


@pytest.mark.parametrize("key", ["endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp"])
def test_ending_options_are_refused_in_streaming(key):
    message = refused({**BS, "subscribe": "t", key: '{"t":{"0":1}}'}, streaming=True)
    assert "not valid in streaming queries" in message


@pytest.mark.parametrize("text", ['{"t":{"0":"5"}}', '{"t":[5]}', 'latestt', '{"t":{"0":1.5}}'])
def test_malformed_offsets_json_is_refused_naming_the_option(text):
    message = refused({**BS, "subscribe": "t", "startingOffsets": text})
    assert message.startswith('Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got ')
    assert "startingoffsets" in message.lower()


def test_start_after_end_in_the_options_is_refused():
    message = refused({**BS, "subscribe": "t", "startingOffsets": '{"t":{"0":7}}',
                       "endingOffsets": '{"t":{"0":3}}'})
    assert "start offset 7" in message and "end offset 3" in message


def test_start_and_end_json_must_name_the_same_partitions():
    message = refused({**BS, "subscribe": "t", "startingOffsets": '{"t":{"0":1}}',
                       "endingOffsets": '{"t":{"1":3}}'})
    assert "don't match" in message


def test_per_partition_timestamps_follow_the_same_rules():
    message = refused({**BS, "subscribe": "t", "startingOffsetsByTimestamp": '{"t":{"0":2000}}',
                       "endingOffsetsByTimestamp": '{"t":{"0":1000}}'})
    assert "start timestamp 2000" in message and "end timestamp 1000" in message
    message = refused({**BS, "subscribe": "t", "startingOffsetsByTimestamp": '{"t":{"0":1}}',
                       "endingOffsetsByTimestamp": '{"t":{"1":3}}'})
    assert "don't match" in message and "startingOffsetsByTimestamp" in message
    # A global timestamp and per-partition ones are not compared (Spark neither).
    batch(subscribe="t", startingTimestamp="5000", endingOffsetsByTimestamp='{"t":{"0":1000}}')


def test_start_minus_two_and_end_minus_one_are_not_compared():
    opts = batch(subscribe="t", startingOffsets='{"t":{"0":-2}}', endingOffsets='{"t":{"0":-1}}')
    assert opts.starting.partition_offsets[("t", 0)] == EARLIEST


# -- timestamps -------------------------------------------------------------------------------------

def test_a_global_timestamp_beats_per_partition_timestamps_which_beat_offsets():
    opts = batch(subscribe="t", startingTimestamp="1000", startingOffsetsByTimestamp='{"t":{"0":5}}',
                 startingOffsets="earliest", endingOffsetsByTimestamp='{"t":{"0":9000}}',
                 endingOffsets="latest")
    assert opts.starting == OffsetLimit("timestamp", timestamp=1000)
    assert opts.ending == OffsetLimit("timestamps", partition_timestamps={("t", 0): 9000})
    opts = batch(subscribe="t", startingOffsetsByTimestamp='{"t":{"0":5}}', startingOffsets="earliest")
    assert opts.starting.kind == "timestamps"


def test_timestamp_must_be_a_long():
    assert "startingtimestamp" in refused({**BS, "subscribe": "t", "startingTimestamp": "yesterday"}).lower()


def test_by_timestamp_strategy_is_error_by_default_and_accepts_latest():
    assert batch(subscribe="t").by_timestamp_strategy == "error"
    assert batch(subscribe="t", startingOffsetsByTimestampStrategy="LATEST").by_timestamp_strategy == "latest"
    assert "startingOffsetsByTimestampStrategy" in refused(
        {**BS, "subscribe": "t", "startingOffsetsByTimestampStrategy": "earliest"})


def test_by_timestamp_json_is_checked():
    with pytest.raises(KafkaOptionError, match="startingOffsetsByTimestamp"):
        parse_partition_numbers('{"t":{"0":"x"}}', "startingOffsetsByTimestamp")


# -- other source options ---------------------------------------------------------------------------

def test_numeric_options_must_be_positive():
    for key in ("minPartitions", "maxRecordsPerPartition", "maxOffsetsPerTrigger"):
        for bad in ("0", "-3", "many"):
            assert key in refused({**BS, "subscribe": "t", key: bad})
    opts = batch(subscribe="t", minPartitions="4", maxRecordsPerPartition="100")
    assert (opts.min_partitions, opts.max_records_per_partition) == (4, 100)


def test_booleans_default_as_in_spark():
    opts = batch(subscribe="t")
    assert opts.fail_on_data_loss is True and opts.include_headers is False
    assert batch(subscribe="t", includeHeaders="TRUE").include_headers is True
    assert "failondataloss" in refused({**BS, "subscribe": "t", "failOnDataLoss": "yes"}).lower()


# -- split_ranges: Spark's KafkaOffsetRangeCalculator -------------------------------------------------

def r(partition: int, start: int, end: int, topic: str = "t") -> OffsetRange:
    return OffsetRange(topic, partition, start, end)


def spans(ranges) -> list[tuple[int, int, int]]:
    return [(x.partition, x.start, x.end) for x in ranges]


def test_without_options_one_task_per_non_empty_partition():
    ranges = [r(0, 0, 10), r(1, 5, 5), r(2, 3, 4)]
    assert spans(split_ranges(ranges, None, None)) == [(0, 0, 10), (2, 3, 4)]


def test_enough_partitions_already_means_no_split():
    ranges = [r(0, 0, 1000), r(1, 0, 1), r(2, 0, 1)]
    assert spans(split_ranges(ranges, 3, None)) == spans(ranges)


def test_min_partitions_splits_one_range_evenly_with_round_off_last():
    # Spark's getDividedPartition: each piece is remaining // pieces-left.
    assert spans(split_ranges([r(0, 0, 10)], 4, None)) == [(0, 0, 2), (0, 2, 4), (0, 4, 7), (0, 7, 10)]
    assert spans(split_ranges([r(0, 100, 110)], 3, None)) == [(0, 100, 103), (0, 103, 106), (0, 106, 110)]


def test_min_partitions_rounds_half_up_like_scala():
    # 50/100*3 = 1.5 rounds to 2 for each partition: 4 tasks (Spark's count, >= minPartitions).
    assert spans(split_ranges([r(0, 0, 50), r(1, 0, 50)], 3, None)) == \
        [(0, 0, 25), (0, 25, 50), (1, 0, 25), (1, 25, 50)]


def test_min_partitions_keeps_small_ranges_whole_and_shares_the_rest():
    # 10/1010*5 rounds to 0 -> one piece; 1000 gets the remaining 4 pieces.
    out = split_ranges([r(0, 0, 1000), r(1, 0, 10)], 5, None)
    assert spans(out) == [(0, 0, 250), (0, 250, 500), (0, 500, 750), (0, 750, 1000), (1, 0, 10)]


def test_min_partitions_never_makes_empty_ranges():
    assert spans(split_ranges([r(0, 0, 2)], 5, None)) == [(0, 0, 1), (0, 1, 2)]


def test_max_records_per_partition_cuts_every_range():
    out = split_ranges([r(0, 0, 25), r(1, 10, 20), r(2, 0, 0)], None, 10)
    assert spans(out) == [(0, 0, 8), (0, 8, 16), (0, 16, 25), (1, 10, 20)]
    assert all(x.size <= 10 for x in out)


def test_max_records_then_min_partitions():
    # 4 pieces of 25 from maxRecords, then minPartitions=8 halves each of them.
    out = split_ranges([r(0, 0, 100)], 8, 25)
    assert len(out) == 8 and all(x.size <= 25 for x in out)
    assert [x.start for x in out] == [0, 12, 25, 37, 50, 62, 75, 87]


@pytest.mark.parametrize("sizes, min_partitions, max_records", [
    ([1000, 1, 77, 5000], 7, None), ([13], 13, 4), ([3, 3, 3], 2, 2), ([999, 998], 10, 300), ([7], 1, None),
])
def test_split_covers_every_offset_once_in_order(sizes, min_partitions, max_records):
    ranges = [r(p, 10, 10 + size) for p, size in enumerate(sizes)]
    out = split_ranges(ranges, min_partitions, max_records)
    for p, size in enumerate(sizes):
        mine = [x for x in out if x.partition == p]
        assert mine[0].start == 10 and mine[-1].end == 10 + size
        assert all(a.end == b.start for a, b in zip(mine, mine[1:]))
        assert all(x.size > 0 for x in mine)
        if max_records:
            assert all(x.size <= max_records for x in mine)


def test_min_partitions_is_approximate_after_max_records_as_in_spark():
    # 4 pieces of ~250 each: 250/1997*10 rounds to 1, so no piece is cut again (8 tasks,
    # not 10): Spark documents the count as approximate.
    out = split_ranges([r(0, 0, 999), r(1, 0, 998)], 10, 300)
    assert len(out) == 8
