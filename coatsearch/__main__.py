"""`python -m coatsearch`: the same command line as `coatsearch`."""

import sys

from coatsearch.cli import main

sys.exit(main())
