"""`python -m runners.cli`: the `pacebench` command."""
import sys

from runners.cli import main

sys.exit(main())
