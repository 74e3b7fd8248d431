"""The command line: ``guardproxy serve | check-policy | schema | replay | scan | tail`` and the worker supervisor.

The top wing: it starts the edge and imports from every wing below; nothing imports it."""
