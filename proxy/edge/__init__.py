"""The edge: the ASGI app, one client request's authorisation, routing and relay, and live policy
reload. It hands each guarded request to the drive.

Imports the drive and the wings below it; never the command line."""
