"""``guardproxy`` (the console script) and ``python -m guardproxy``."""

from __future__ import annotations

import sys


def main() -> int:
    from proxy.commands.cli import main as run  # the wheel's build rewrites this to guardproxy.proxy

    return run()


if __name__ == "__main__":
    sys.exit(main())
