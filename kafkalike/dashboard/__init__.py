"""The web dashboard (bin/kafkalike-dashboard.sh, docs/dashboard.md): a cluster seen through the
Kafka protocol and ZooKeeper, served by Twisted web as plain HTML with server-drawn SVG plots."""
