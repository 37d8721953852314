"""Preload for an external scheduler: ``dask scheduler --preload pbbflow.viz.preload`` serves the
pbbflow page at ``/pbbflow`` (the import registers it before the scheduler's dashboard starts)."""

from .page import register_page

register_page()
