"""``python -m proxy`` as the bench starts it, optionally under cProfile.

With ``BENCH_PROFILE_DIR`` set, the proxy runs under cProfile and writes
``$BENCH_PROFILE_DIR/<pid>.prof`` when it gets SIGTERM or SIGINT (uvicorn's graceful stop), so a
benchmark run can say where a guardproxy contender spends its time. Without it this is exactly
``python -m proxy``. Nothing in proxy/ knows about it.
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    from proxy.commands.cli import main as cli_main

    out = os.environ.get("BENCH_PROFILE_DIR")
    if not out:
        return cli_main(sys.argv[1:])
    import cProfile
    import signal

    # uvicorn re-raises the stop signal once it has shut down; turn SIGTERM into SystemExit so the
    # ``finally`` below still writes the profile.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    prof = cProfile.Profile()
    prof.enable()
    try:
        return cli_main(sys.argv[1:])
    finally:
        prof.disable()
        os.makedirs(out, exist_ok=True)
        prof.dump_stats(os.path.join(out, f"{os.getpid()}.prof"))


if __name__ == "__main__":
    sys.exit(main())
