"""The package list for setuptools, discovered: the repository root is the package ``pbbflow``
(``package-dir`` in pyproject.toml), so its subpackages are the root's packages under that name.

setuptools runs this file as ``__main__``; named as the setup script, it is left out of the wheel
(a package's modules never include it).  Imported as ``pbbflow.setup`` it does nothing.
"""

if __name__ == "__main__":
    from setuptools import find_packages, setup

    NOT_THE_PACKAGE = ["tests", "benchmarks", "notebooks", "examples", "docs", "build"]
    found = find_packages(exclude=[pattern for name in NOT_THE_PACKAGE for pattern in (name, f"{name}.*")])
    # script_name: the build backend runs this file from the root with its own sys.argv[0]
    setup(script_name="setup.py", packages=["pbbflow", *(f"pbbflow.{name}" for name in found)])
