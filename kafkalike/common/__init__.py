"""What several floors share: Kafka's names and tables, and the broker-to-broker client.

This floor stands on `kafkalike.protocol` only, so the broker, the controller, the
coordinator, storage, the client and the tools can all import it without reaching
sideways or up:

- `topics`: Kafka's rules for topic names and the internal topics (Java's `Topic`);
- `resources`: the resource types, config sources and synonyms the config APIs speak in;
- `versions`: the inter-broker protocol / message format versions Kafka 2.8 knows;
- `config_def`: the one ConfigDef engine (types, parsing, validators, keys, ConfigError)
  the broker's, the topics' and the clients' config tables are declared on;
- `assignment`: replica assignment for new topics and partitions (Kafka's AdminUtils);
- `framing` and `outbound`: Kafka's size-prefixed framing on Twisted, and the
  connection a broker or the controller opens to another broker.
"""
