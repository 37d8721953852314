"""Check: LLVM's x86 cmov-to-branch conversion is off in the flow-shop explorer's machine code
only, printing JSON.

Each case runs in a process of its own with an empty numba cache, so that everything compiles,
and reads the object code numba made (``objdump -d`` of what its cache would store; numba's
``inspect_asm`` would re-generate the assembly with the option as it is at the time of asking):

* ``spatial``: the spatial family's search code alone (``spatial_code``);
* ``flowshop_then_spatial``: an IVM first (``compile_steps`` compiles ``explore_steps``), then
  the same spatial code in the same process;
* ``explore_steps_default``: ``explore_steps`` compiled with LLVM's default, as a plain first
  call would;
* ``process_wide``: the option off for the whole process from the start (the earlier form), then
  the IVM and the spatial code.

Per case: the cmov instructions in ``explore_steps`` and in the spatial functions, and a digest
of the spatial functions' instructions (symbol names, which carry numba's compile counters,
left out).  Scoped as intended: the spatial digest is the same in the first two cases and
``explore_steps`` has more cmovs than in ``explore_steps_default``.

    python benchmarks/cmov_scope.py
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

NETWORK_PROBLEM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "networks", "acas-shaped-5-6x50-5-relu.onnx")
CASES = ("spatial", "flowshop_then_spatial", "explore_steps_default", "process_wide")


def instructions(obj: bytes) -> list[str]:
    """The instructions of an object file, without addresses and symbol names."""
    with tempfile.NamedTemporaryFile(suffix=".o") as f:
        f.write(obj)
        f.flush()
        text = subprocess.run(
            ["objdump", "-d", "--no-show-raw-insn", f.name], capture_output=True, text=True, check=True
        ).stdout
    out = []
    for line in text.splitlines():
        match = re.match(r"\s+[0-9a-f]+:\s+(.*)", line)
        if match:
            out.append(re.sub(r"\s*(<[^>]*>|#.*)", "", match.group(1)).strip())
    return out


def machine_code(dispatchers) -> tuple[int, int, str]:
    """Functions, cmov instructions and a digest of the instructions of all the dispatchers' code."""
    digest = hashlib.sha256()
    functions = cmovs = 0
    for name, dispatcher in sorted(dispatchers, key=lambda d: d[0]):
        for cres in dispatcher.overloads.values():
            code = instructions(cres.library._compiled_object)
            functions += 1
            cmovs += sum(i.startswith("cmov") for i in code)
            digest.update(name.encode() + b"\0" + "\n".join(code).encode())
    return functions, cmovs, digest.hexdigest()[:16]


def spatial_code() -> list:
    """Compile what the spatial family's search runs on a network problem (bounds, contraction, point
    and float evaluation, network bounds); its numba dispatchers with code, by name."""
    import math

    from pbbflow.spatial.bnb import compile_bounds, load_float_code
    from pbbflow.spatial.bounds import evaluate_point
    from pbbflow.spatial.contract import contract_boxes
    from pbbflow.spatial.network import NetworkObjective
    from pbbflow.spatial.network_bounds import NetworkBounds
    from pbbflow.spatial.onnx_network import onnx_problem

    compile_bounds()  # the subdomain bounds' body, in this process
    problem = onnx_problem(NETWORK_PROBLEM, [(0.05, 0.15)], output=0)
    lo, hi = problem.lower[None, :].copy(), problem.upper[None, :].copy()
    contract_boxes(problem.tape, lo, hi, math.inf)
    evaluate_point(problem.tape, problem.lower)
    load_float_code(problem)
    objective = NetworkObjective.of(problem)
    inputs = list(objective.inputs)
    NetworkBounds(objective.network).lower_bound(problem.lower[inputs], problem.upper[inputs], objective.c, objective.d)
    return [
        (f"{module_name}.{name}", value)
        for module_name, module in list(sys.modules.items())
        if module_name.startswith("pbbflow.spatial")
        for name, value in vars(module).items()
        if hasattr(value, "overloads") and getattr(value, "_cache", None) is not None and value.overloads
    ]


def run_case(case: str) -> dict:
    """One case, in this process (its numba cache must be empty)."""
    import llvmlite.binding as llvm

    if case == "process_wide":
        llvm.set_option("", "--x86-cmov-converter=false")
    result: dict = {"case": case}
    if case != "spatial":
        from pbbflow.flowshop import ivm
        from pbbflow.flowshop.choices import BOUND_NAMES, BRANCH_NAMES
        from pbbflow.flowshop.load import load_instance

        problem = ivm.Problem(load_instance("ta001").p, BOUND_NAMES["lb1"], BRANCH_NAMES["minmin"])
        if case == "explore_steps_default":
            ivm._cmov_kept = contextlib.nullcontext  # compile_steps as a plain first call would compile
        ivm.IVM(problem)
        functions, cmovs, digest = machine_code([("explore_steps", ivm.explore_steps)])
        result["explore_steps"] = {"overloads": functions, "cmov": cmovs, "digest": digest}
    if case != "explore_steps_default":
        functions, cmovs, digest = machine_code(spatial_code())
        result["spatial"] = {"functions": functions, "cmov": cmovs, "digest": digest}
    return result


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        print(json.dumps(run_case(sys.argv[2])))
        return
    results = []
    for case in CASES:
        with tempfile.TemporaryDirectory() as cache:
            env = os.environ | {"NUMBA_CACHE_DIR": cache}
            out = subprocess.run(
                [sys.executable, __file__, "--case", case], env=env, capture_output=True, text=True, check=True
            )
            results.append(json.loads(out.stdout.splitlines()[-1]))
            print(json.dumps(results[-1]), file=sys.stderr)
    by_case = {r["case"]: r for r in results}
    print(
        json.dumps(
            {
                "benchmark": "cmov_scope",
                "command": "python benchmarks/cmov_scope.py",
                "spatial_unchanged_by_flowshop": by_case["spatial"]["spatial"]
                == by_case["flowshop_then_spatial"]["spatial"],
                "spatial_changed_by_process_wide_option": by_case["spatial"]["spatial"]
                != by_case["process_wide"]["spatial"],
                "cases": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
