"""Make docs/dashboard.png: the pbbflow dashboard page during a real run, shot by headless Chromium.

ta021 from NEH's schedule on a local cluster of three single-threaded workers: two explorers
and iterated greedy beside them (its improvements show in the incumbent).  The picture is
taken ``--after`` seconds into the run; then the run is stopped.

    python docs/dashboard_screenshot.py --after 40
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser import screenshot  # noqa: E402

from pbbflow.flowshop.taillard import taillard_instance  # noqa: E402
from pbbflow.viz import page  # noqa: E402, F401 (the pbbflow page on the dashboard)
from pbbflow.workflow.cluster import attach_dashboard, dashboard_link, open_cluster  # noqa: E402
from pbbflow.workflow.run import create_run, drive  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--after", type=float, default=40.0, help="seconds into the run")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "dashboard.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, open_cluster("local", workers=3, threads_per_worker=1) as client:
        attach_dashboard(client)
        store = create_run(
            Path(folder) / "ta021.zarr", taillard_instance(21), ub=None, bound="lb1", branch="minmin", initial="neh"
        )
        stop = threading.Event()
        run = threading.Thread(target=drive, args=(store, client), kwargs={"stop": stop, "heuristics": 1})
        run.start()
        time.sleep(args.after)
        print(screenshot(dashboard_link(client), args.out, wait_s=4, width=1400, height=860))
        stop.set()
        run.join()


if __name__ == "__main__":
    main()
