"""The downstream side: the client's connection. Raw ASGI helpers and the ``Responder``, the one
object that writes to the client; the drive and the edge send everything through it."""
