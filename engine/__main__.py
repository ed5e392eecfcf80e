"""`python -m invlab ARGS` runs the `invlab` command line (see `invlab.cli`).

Importing this module does nothing: only running it as the program starts the command line, so no import by name
(a tool listing modules, a web route resolving one) can run a command on someone else's arguments."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
