"""The consumer group protocol's subscription and assignment blobs."""
from kafkalike.protocol.schema import F, Message, build_classes

CONSUMER_PROTOCOL_SUBSCRIPTION = Message(
    'ConsumerProtocolSubscription', 'data', valid='0-1', flexible='none',
    fields=[
        F('topics', '[]string', '0+'),
        F('user_data', 'bytes', '0+', nullable='0+', default=None),
        F('owned_partitions', '[]TopicPartition', '1+', ignorable=True, fields=[
            F('topic', 'string', '1+'),
            F('partitions', '[]int32', '1+'),
        ]),
    ])
ConsumerProtocolSubscription = build_classes(CONSUMER_PROTOCOL_SUBSCRIPTION)

CONSUMER_PROTOCOL_ASSIGNMENT = Message(
    'ConsumerProtocolAssignment', 'data', valid='0-1', flexible='none',
    fields=[
        F('assigned_partitions', '[]TopicPartition', '0+', fields=[
            F('topic', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
        F('user_data', 'bytes', '0+', nullable='0+', default=None),
    ])
ConsumerProtocolAssignment = build_classes(CONSUMER_PROTOCOL_ASSIGNMENT)

# Java's StickyAssignor user data (a Struct in StickyAssignor.java, not a JSON message):
# the member's last assignment and, from version 1, the generation it was made in. The
# blob carries no version; readers try version 1 and fall back to 0.
STICKY_ASSIGNOR_USER_DATA = Message(
    'StickyAssignorUserData', 'data', valid='0-1', flexible='none',
    fields=[
        F('previous_assignment', '[]TopicPartition', '0+', fields=[
            F('topic', 'string', '0+'),
            F('partitions', '[]int32', '0+'),
        ]),
        F('generation', 'int32', '1+', default=-1),
    ])
StickyAssignorUserData = build_classes(STICKY_ASSIGNOR_USER_DATA)
