"""Operations sinks: the audit log, the live decision feed, metrics, traces and structured logs.

Leaves: imported by the drive, the edge and the command line; they import no other wing."""
