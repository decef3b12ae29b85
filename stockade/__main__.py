"""``python -m stockade`` runs the CLI."""

import sys

from stockade.cli.main import main

sys.exit(main())
