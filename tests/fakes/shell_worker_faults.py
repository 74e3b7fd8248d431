"""A shell-parser worker that dies of a segmentation fault or hangs on chosen commands and is the real
worker (``guardrails.tools.shell_worker.serve``) for every other command. The real parser's known
crash is removed by construction (``shell.ctype_safe``), so a crash has to be made on purpose to
test what the proxy does when its parser dies. Run as a script: ``python shell_worker_faults.py``."""

from __future__ import annotations

import ctypes
import json
import sys
import time

from guardrails.tools import shell
from guardrails.tools.shell_worker import encode

CRASH = "echo crash-the-parser"
HANG = "echo hang-the-parser"


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        request = json.loads(line)
        if request["command"] == CRASH:
            ctypes.string_at(0)  # reads address 0: SIGSEGV, as a crash in C code would
        if request["command"] == HANG:
            time.sleep(3600)
        out.write(encode(shell.analyze(request["command"], request.get("stdin"))))
        out.flush()


if __name__ == "__main__":
    main()
