"""One module per CLI command, each with a ``run`` function that does the command's work; ``cli.py``
holds only the Typer signatures. Heavy imports happen inside ``run`` so ``--help`` stays fast."""
