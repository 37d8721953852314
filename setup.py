"""The package list, discovered: the repository's root is the package ``pbbflow`` (``package-dir`` in
pyproject.toml), and every folder below it with an ``__init__.py`` is one of its subpackages."""

from setuptools import find_packages, setup

NOT_PACKAGES = ["build*", "tests*", "benchmarks*", "notebooks*", "examples*", "docs*"]

setup(packages=["pbbflow", *(f"pbbflow.{name}" for name in find_packages(exclude=NOT_PACKAGES))])
