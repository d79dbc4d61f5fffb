"""`python -m runners.cli`: the `pacebench` command."""
from runners.cli import entry

entry()
