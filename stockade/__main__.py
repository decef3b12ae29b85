"""``python -m stockade`` runs the CLI."""

from stockade.cli.main import console

console()
