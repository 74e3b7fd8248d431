"""The upstream client: guardproxy's own HTTP/1.1 pool (``http1``), the forwarding client over it
(``client``) and content-coding. Knows nothing of guardrails or of the turn."""
