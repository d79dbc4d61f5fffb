"""HoloViews for the views, with its Bokeh backend loaded once.

The views style their plots with Bokeh options, which HoloViews knows only once the backend is
loaded. Every view module takes `hv` from here, so the backend is loaded exactly once, by
whichever view is imported first (workbench/figures.py adds Matplotlib for paper figures).

Plots are drawn on a 2D canvas, not WebGL (HoloViews' default): they hold at most thousands of
points, which a canvas draws in milliseconds, and a browser without a GPU (a remote desktop, a
virtual machine, headless Chromium) emulates WebGL in software, where every plot cost about half
a second to copy to the page (27 s of the 41.7 s the v0.5 report took to show its first tab).
"""
from __future__ import annotations

import holoviews as hv
from holoviews.plotting.bokeh import BokehRenderer

hv.extension("bokeh", logo=False)
BokehRenderer.webgl = False  # the plots' class-wide default (ElementPlot reads renderer.webgl)

__all__ = ["hv"]
