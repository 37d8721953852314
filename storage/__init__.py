"""The Zarr run store: versioned, crash-safe checkpoints of a search."""
