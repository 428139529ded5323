"""``python -m agentrecall.cli``."""

import sys

from agentrecall.cli.main import main

sys.exit(main())
