"""guardproxy: the HTTP edge, the wire formats and the stream pipeline."""
