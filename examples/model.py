"""A Python model file for ``pbbflow minimize examples/model.py`` (the README's example).

A model file is code: pbbflow imports it and takes its module-level ``problem`` (a Model or a
Problem) or calls its function ``model()``.  docs/problem-format.md describes the other formats.
"""

from pbbflow.spatial import Model, exp, sin

problem = Model("example")
x, y = problem.variable(-3, 3, name="x"), problem.variable(-3, 3, name="y")
problem.minimize((1 - x) ** 2 * exp(-(x**2) - y**2) + sin(x * y))
problem.subject_to(x**2 + y**2 <= 4)  # or problem.inequality(x**2 + y**2 - 4)
problem.subject_to(x - y == 1)  # or problem.equality(x - y - 1)
