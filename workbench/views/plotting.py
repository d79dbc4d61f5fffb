"""HoloViews for the views, with its Bokeh backend loaded once.

The views style their plots with Bokeh options, which HoloViews knows only once the backend is
loaded. Every view module takes `hv` from here, so the backend is loaded exactly once, by
whichever view is imported first (workbench/figures.py adds Matplotlib for paper figures).
"""
from __future__ import annotations

import holoviews as hv

hv.extension("bokeh", logo=False)

__all__ = ["hv"]
