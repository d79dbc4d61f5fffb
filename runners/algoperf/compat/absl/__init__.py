"""Pacebench's stand-in for `absl` (only `absl.logging`), used when absl-py is not installed."""
