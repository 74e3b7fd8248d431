"""The edge: the ASGI app, one client request's authorisation, routing and relay, the responder that
sends everything the client gets, and live policy reload.

Imports the drive and the wings below it; never the command line."""
