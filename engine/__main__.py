"""`python -m engine ARGS` runs the `invlab` command line (see `engine.cli`)."""
import sys

from .cli import main

sys.exit(main())
