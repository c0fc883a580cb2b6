"""``python -m pipeline_core`` runs the ``sluice`` command."""

import sys

from pipeline_core.cli import main

sys.exit(main())
