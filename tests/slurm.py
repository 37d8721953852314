"""Whether the tests marked ``slurm`` can run here: a Slurm with an idle partition
(start one with ``bash .ci/slurm-local.sh up``)."""

import shutil
import subprocess


def slurm_idle() -> str | None:
    """Why the Slurm tests cannot run here, or None when a node has free CPUs ("completing": jobs ending)."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "Slurm is not installed (no sinfo/sbatch on PATH)"
    try:  # sinfo retries for ~9 s when no slurmctld answers
        states = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=5, check=False)
    except subprocess.TimeoutExpired:
        return "no Slurm controller answered sinfo within 5 s"
    if states.returncode != 0 or not {"idle", "mixed", "completing"} & set(states.stdout.split()):
        return f"no idle Slurm partition (sinfo: {(states.stdout + states.stderr).strip() or 'nothing'})"
    return None
