"""WriteTxnMarkers on a broker whose inter-broker protocol predates transactions (the rest of the
handler is tested against real brokers in tests/integration/test_transaction_markers.py)."""
from __future__ import annotations

from kafkalike.protocol.errors import ErrorCode as E
from kafkalike.protocol.messages.write_txn_markers import WriteTxnMarkersRequest as R
from tests.unit.test_handlers_disabled_features import Client, FakeServer


def test_an_inter_broker_protocol_before_0_11_refuses_every_marker():
    server = FakeServer(topics={"t": 2}, ibp="0.10.2-IV0")
    marker = R.WritableTxnMarker(producer_id=9, producer_epoch=0, transaction_result=True, coordinator_epoch=0,
                                 topics=[R.WritableTxnMarkerTopic(name="t", partition_indexes=[0, 1])])
    for version in (0, 1):
        resp = Client(server).ask(27, version, R(markers=[marker]))
        assert [(m.producer_id, t.name, p.partition_index, p.error_code)
                for m in resp.markers for t in m.topics for p in t.partitions] == [
            (9, "t", 0, E.UNSUPPORTED_VERSION), (9, "t", 1, E.UNSUPPORTED_VERSION)]
