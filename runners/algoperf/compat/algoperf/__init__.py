"""Pacebench's stand-in for the `algoperf` package: just what submission files import.

Loaded only when the real `algoperf` is not installed (see runners/algoperf/adapter.py).
"""
__version__ = "0.0.0+pacebench-compat"
