"""`python -m invlab ARGS` runs the `invlab` command line (see `invlab.cli`)."""
import sys

from .cli import main

sys.exit(main())
