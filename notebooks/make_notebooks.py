"""Writes notebooks/*.ipynb (run from the repository root); the cells live here so that they stay reviewable."""

import nbformat as nbf

quick = nbf.v4.new_notebook()
quick.cells = [
    nbf.v4.new_markdown_cell(
        "# pbbflow quickstart\n\nSolve a Taillard instance on a local Dask cluster, "
        "open the run store with plain `zarr`, and plot it.  `INSTANCE` is small so that "
        "the test suite can run this notebook; try `ta021` on a GPU."
    ),
    nbf.v4.new_code_cell('INSTANCE = "ta011"\nRUN = "quickstart-run.zarr"\nWORKERS = 2'),
    nbf.v4.new_code_cell(
        "from pbbflow.flowshop.load import load_instance\n"
        "from pbbflow.flowshop.family import create_flowshop_run\n"
        "from pbbflow.workflow.cluster import open_cluster\n"
        "from pbbflow.workflow.run import drive\n\n"
        "instance = load_instance(INSTANCE)\n"
        'with open_cluster("local", workers=WORKERS, gpus=0) as client:\n'
        '    store = create_flowshop_run(RUN, instance, ub=None, bound="lb1", branch="minmin", overwrite=True, initial="ig")\n'
        "    result = drive(store, client)\n"
        "result"
    ),
    nbf.v4.new_markdown_cell("The store is plain Zarr v3: no pickles, readable without pbbflow."),
    nbf.v4.new_code_cell(
        "import zarr\n\n"
        'root = zarr.open_group(RUN, mode="r")\n'
        "print(dict(root.attrs))\n"
        'print(root["instance/p"][:].shape)\n'
        'checkpoint = root[root.attrs["current"]]  # the last committed version\n'
        "print(sorted(checkpoint.attrs.keys()))"
    ),
    nbf.v4.new_code_cell(
        "from pathlib import Path\n\n"
        "from IPython.display import Image, display\n"
        "from pbbflow.storage.runstore import RunStore\n"
        "from pbbflow.viz.plots import plot_run\n\n"
        'for path in plot_run(RunStore.open(RUN), Path("quickstart-plots")):\n'
        "    display(Image(filename=str(path)))"
    ),
]
nbf.write(quick, "notebooks/quickstart.ipynb")

scaling = nbf.v4.new_notebook()
scaling.cells = [
    nbf.v4.new_markdown_cell(
        "# Scaling on a local cluster\n\nOne fixed tree (UB = optimum, so every run decomposes "
        "the same nodes) on local clusters of 1 and 2 single-threaded workers.  "
        "`INSTANCE` is small for the test suite; use e.g. `ta017` (UB 1484) for a real measurement."
    ),
    nbf.v4.new_code_cell('INSTANCE, UB = "ta011", 1582\nSHAPES = [1, 2]'),
    nbf.v4.new_code_cell(
        "import tempfile, time\nfrom pathlib import Path\n\n"
        "from pbbflow.flowshop.load import load_instance\n"
        "from pbbflow.flowshop.family import create_flowshop_run\n"
        "from pbbflow.workflow.cluster import open_cluster\n"
        "from pbbflow.workflow.run import drive\n\n"
        "instance = load_instance(INSTANCE)\nrows = []\n"
        "with tempfile.TemporaryDirectory() as folder:\n"
        "    for workers in SHAPES:\n"
        '        with open_cluster("local", workers=workers, gpus=0) as client:\n'
        '            store = create_flowshop_run(Path(folder) / f"run-{workers}.zarr", instance, ub=UB, bound="lb1", branch="minmin")\n'
        "            started = time.perf_counter()\n"
        "            result = drive(store, client)\n"
        '            rows.append({"workers": workers, "seconds": time.perf_counter() - started, "nodes": result["nodes"]})\n'
        'assert len({r["nodes"] for r in rows}) == 1, rows  # the same tree on every shape\n'
        "rows"
    ),
    nbf.v4.new_code_cell(
        "import matplotlib.pyplot as plt\n\n"
        'base = rows[0]["seconds"]\n'
        "fig, ax = plt.subplots(figsize=(5, 3.5))\n"
        'ax.plot([r["workers"] for r in rows], [base / r["seconds"] for r in rows], marker="o", label="measured")\n'
        'ax.plot(SHAPES, SHAPES, linestyle="--", label="ideal")\n'
        'ax.set_xlabel("workers"); ax.set_ylabel("speed-up"); ax.legend(); ax.grid(alpha=0.3)'
    ),
]
nbf.write(scaling, "notebooks/scaling.ipynb")

spatial = nbf.v4.new_notebook()
spatial.cells = [
    nbf.v4.new_markdown_cell(
        "# Continuous global optimization\n\nProve the global minimum of a small neural network "
        "(the seed paper's peaks ANN) by spatial branch-and-bound: first in this process, then as a "
        "resumable run on a local Dask cluster with a Zarr run store, stopped and resumed on "
        "another shape.  The answer is a certified lower bound and a feasible point.  "
        "`PROBLEM` is small for the test suite; on a GPU try a file of `../shared/data/spatial`."
    ),
    nbf.v4.new_code_cell('PROBLEM = "peaks-ann-error-max"\nRUN = "spatial-run.zarr"'),
    nbf.v4.new_code_cell(
        "from pbbflow.spatial.bnb import minimize\n"
        "from pbbflow.spatial.options import MinimizeOptions\n"
        "from pbbflow.spatial.load import load_problem\n\n"
        "problem = load_problem(PROBLEM)\n"
        "alone = minimize(problem, MinimizeOptions())\n"
        "alone.to_dict()"
    ),
    nbf.v4.new_markdown_cell(
        "The same proof as a run: its first work is the root box bounded and a local solve; "
        "a node limit stops the first session, a second one on two workers finishes it."
    ),
    nbf.v4.new_code_cell(
        "from pbbflow.spatial.family import SpatialRun, first_work\n"
        "from pbbflow.workflow.cluster import open_cluster\n"
        "from pbbflow.workflow.run import create_run, drive\n\n"
        "instance = SpatialRun.new(problem, MinimizeOptions(eps_abs=1e-9, eps_rel=0.0))\n"
        "first = first_work(instance)\n"
        "store = create_run(RUN, instance, work=first.boxes, incumbent=first.value, solution=first.x,\n"
        "                   settled=first.settled, nodes=first.nodes, overwrite=True)\n"
        'with open_cluster("local", workers=1, gpus=0) as client:\n'
        "    stopped = drive(store, client, node_limit=100, budget_s=0.2)\n"
        'with open_cluster("local", workers=2, gpus=0) as client:\n'
        "    result = drive(store, client)\n"
        'assert result["lower_bound"] <= problem.optimum <= result["objective"]\n'
        '{"stopped": {k: stopped[k] for k in ("status", "lower_bound", "objective", "open_boxes")}, "result": result}'
    ),
    nbf.v4.new_code_cell(
        "from pathlib import Path\n\n"
        "from IPython.display import Image, display\n"
        "from pbbflow.storage.runstore import RunStore\n"
        "from pbbflow.viz.plots import plot_run\n\n"
        'for path in plot_run(RunStore.open(RUN), Path("spatial-plots")):\n'
        "    display(Image(filename=str(path)))"
    ),
]
nbf.write(spatial, "notebooks/spatial.ipynb")
