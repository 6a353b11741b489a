"""Kafka 2.8's default error messages: one table in kafkalike.protocol.errors, used by both clients."""
from __future__ import annotations

import pytest

from kafkalike.client.admin import KafkaAdminError
from kafkalike.client.errors import BrokerResponseError, error_for_code
from kafkalike.protocol.errors import ErrorCode, default_message

ERROR_CODES = [code for code in ErrorCode if code != ErrorCode.NONE]


@pytest.mark.parametrize("code", ERROR_CODES, ids=lambda code: code.name)
def test_every_error_code_has_kafkas_message_not_its_name(code):
    message = default_message(code)
    assert message.strip()
    assert message != code.name
    assert default_message(int(code)) == message          # a bare number from the wire looks up the same


@pytest.mark.parametrize("code, message", [
    (ErrorCode.OFFSET_OUT_OF_RANGE,
     "The requested offset is not within the range of offsets maintained by the server."),
    (ErrorCode.NOT_LEADER_OR_FOLLOWER,
     "For requests intended only for the leader, this error indicates that the broker is not the current leader. "
     "For requests intended for any replica, this error indicates that the broker is not a replica of the topic "
     "partition."),
    (ErrorCode.TOPIC_ALREADY_EXISTS, "Topic with this name already exists."),
    (ErrorCode.GROUP_ID_NOT_FOUND, "The group id does not exist."),
])
def test_messages_are_kafkas_exact_text(code, message):
    assert default_message(code) == message


def test_unknown_codes_fall_back_to_a_name():
    assert default_message(ErrorCode.NONE) == "NONE"
    assert default_message(9999) == "9999"
    assert default_message(-42) == "-42"


@pytest.mark.parametrize("code", ERROR_CODES, ids=lambda code: code.name)
def test_broker_response_error_uses_the_table(code):
    error = BrokerResponseError(code)
    assert error.message == str(error) == default_message(code)
    assert BrokerResponseError(code, "from the broker").message == "from the broker"


def test_error_for_code_uses_the_table():
    for code in (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NETWORK_EXCEPTION, ErrorCode.MESSAGE_TOO_LARGE,
                 ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.INVALID_TOPIC_EXCEPTION,
                 ErrorCode.OFFSET_OUT_OF_RANGE):
        assert str(error_for_code(code)) == default_message(code)


def test_broker_response_error_for_an_unknown_number_is_kafkas_unknown_server_error():
    error = BrokerResponseError(9999)
    assert error.code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert error.message == "The server experienced an unexpected error when processing the request."


@pytest.mark.parametrize("code", ERROR_CODES, ids=lambda code: code.name)
def test_admin_error_uses_the_table(code):
    error = KafkaAdminError(code)
    assert error.message == str(error) == default_message(code)
    assert KafkaAdminError(code, "from the broker").message == "from the broker"


def test_admin_delete_records_past_the_high_watermark_reads_as_kafka():
    error = KafkaAdminError(ErrorCode.OFFSET_OUT_OF_RANGE)
    assert error.message == ("The requested offset is not within the range of offsets maintained by the "
                             "server.")
    assert error.java_class == "org.apache.kafka.common.errors.OffsetOutOfRangeException"
