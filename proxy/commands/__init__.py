"""The command line: ``guardproxy serve | check-policy | replay | tail`` and the worker supervisor.

The top wing: it starts the edge and imports from every wing below; nothing imports it."""
