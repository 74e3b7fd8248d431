import sys

from proxy.commands.cli import main

sys.exit(main())
