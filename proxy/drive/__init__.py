"""The drive: runs one guarded turn against the upstream (``guarded_turn``), executes what the
sans-IO core commands (vetting, judge calls, off-loop checks), and holds what a running proxy shares
(``services``: policies, held prompts, the upstream pool, audit and metrics sinks).

Imports the core, the upstream client, ops and the wire formats; never the edge."""
