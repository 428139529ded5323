"""``python -m agentrecall``: the ``agentrecall`` command line."""

import sys

from agentrecall.cli.main import main

sys.exit(main())
