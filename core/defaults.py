"""Run defaults that the driver (``workflow.run``) and the command line (``cli``) share, defined once."""

CHECKPOINT_EVERY_S = 60.0  # seconds between a run's checkpoints
