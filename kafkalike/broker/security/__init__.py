"""The broker's listener security: TLS contexts (tls.py), each listener's settings from
Kafka's keys (listener.py) and the SASL server side of a connection (authenticator.py)."""
