"""Train the larger dense networks of issue 36's class and write them as pbbflow ANN files.

Each network is fitted to a standard test function on its box with numpy and scipy only:
Latin-hypercube training points (seeded), inputs mapped onto [-1, 1], outputs z-scored, Glorot
initial weights, L-BFGS-B on the mean squared error plus a small weight decay, a fixed iteration
cap. The files record the validation error, and ``best_known`` from random sampling polished by
L-BFGS-B (a reference value, not a certificate). Deterministic for a given numpy and scipy.

    python benchmarks/make_networks.py benchmarks/networks
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from scipy.stats import qmc


def _peaks(x):
    a, b = x[:, 0], x[:, 1]
    return (
        3 * (1 - a) ** 2 * np.exp(-(a**2) - (b + 1) ** 2)
        - 10 * (a / 5 - a**3 - b**5) * np.exp(-(a**2) - b**2)
        - np.exp(-((a + 1) ** 2) - b**2) / 3
    )


def _branin(x):
    a, b = x[:, 0], x[:, 1]
    return (b - 5.1 / (4 * np.pi**2) * a**2 + 5 / np.pi * a - 6) ** 2 + 10 * (1 - 1 / (8 * np.pi)) * np.cos(a) + 10


def _camel(x):
    a, b = x[:, 0], x[:, 1]
    return (4 - 2.1 * a**2 + a**4 / 3) * a**2 + a * b + (-4 + 4 * b**2) * b**2


def _gauss_sum(x):
    centres = np.linspace(0.2, 0.8, x.shape[1])
    return -np.exp(-8 * np.sum((x - centres) ** 2, axis=1)) - 0.5 * np.exp(
        -20 * np.sum((x - centres[::-1]) ** 2, axis=1)
    )


def _styblinski_tang(x):
    return 0.5 * np.sum(x**4 - 16 * x**2 + 5 * x, axis=1)


def _rosenbrock(x):
    return np.sum(100 * (x[:, 1:] - x[:, :-1] ** 2) ** 2 + (1 - x[:, :-1]) ** 2, axis=1)


# name: (target, box lo, box hi, hidden widths, activation, seed)
NETWORKS = {
    "peaks-2-32-32-1-tanh": (_peaks, [-3, -3], [3, 3], [32, 32], "tanh", 1),
    "branin-2-64-64-1-relu": (_branin, [-5, 0], [10, 15], [64, 64], "relu", 2),
    "camel-2-32-32-1-sigmoid": (_camel, [-3, -2], [3, 2], [32, 32], "sigmoid", 3),
    "gauss3-3-16-16-16-1-tanh": (_gauss_sum, [0, 0, 0], [1, 1, 1], [16, 16, 16], "tanh", 4),
    "gauss3-3-32-32-1-relu": (_gauss_sum, [0, 0, 0], [1, 1, 1], [32, 32], "relu", 5),
    "rosenbrock-4-32-32-1-tanh": (_rosenbrock, [-1.5] * 4, [1.5] * 4, [32, 32], "tanh", 6),
    "styblinski-5-16-16-1-tanh": (_styblinski_tang, [-5] * 5, [5] * 5, [16, 16], "tanh", 7),
    "gauss6-6-16-16-1-sigmoid": (_gauss_sum, [0] * 6, [1] * 6, [16, 16], "sigmoid", 8),
}
ACT = {
    "tanh": (np.tanh, lambda a: 1 - a**2),
    "sigmoid": (lambda z: 1 / (1 + np.exp(-z)), lambda a: a * (1 - a)),
    "relu": (lambda z: np.maximum(z, 0.0), lambda a: (a > 0).astype(float)),
}
DECAY = 1e-6


def _unpack(theta, sizes):
    weights, biases, at = [], [], 0
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        weights.append(theta[at : at + n_in * n_out].reshape(n_out, n_in))
        at += n_in * n_out
        biases.append(theta[at : at + n_out])
        at += n_out
    return weights, biases


def _forward(theta, sizes, activation, a0):
    act = ACT[activation][0]
    weights, biases = _unpack(theta, sizes)
    values = [a0]
    for k, (w, b) in enumerate(zip(weights, biases)):
        z = values[-1] @ w.T + b
        values.append(z if k == len(weights) - 1 else act(z))
    return weights, values


def _loss(theta, sizes, activation, a0, y):
    """0.5 mean squared error + DECAY/2 |W|^2, and its gradient (backpropagation)."""
    weights, values = _forward(theta, sizes, activation, a0)
    residual = values[-1][:, 0] - y
    loss = 0.5 * np.mean(residual**2) + 0.5 * DECAY * sum(np.sum(w**2) for w in weights)
    delta = residual[:, None] / len(y)
    grads = []
    for k in range(len(weights) - 1, -1, -1):
        grads.append((delta.T @ values[k] + DECAY * weights[k], delta.sum(axis=0)))
        if k:
            delta = (delta @ weights[k]) * ACT[activation][1](values[k])
    flat = [part.ravel() for w_grad, b_grad in reversed(grads) for part in (w_grad, b_grad)]
    return loss, np.concatenate(flat)


def train(name: str, target, lo, hi, hidden, activation: str, seed: int, n_train: int, iterations: int) -> dict:
    """The ANN document of the network fitted to ``target`` on the box."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    d = len(lo)
    rng = np.random.default_rng(seed)
    sampler = qmc.LatinHypercube(d=d, seed=seed)
    x = qmc.scale(sampler.random(n_train + n_train // 2), lo, hi)
    y_raw = target(x)
    y_mu, y_sd = float(np.mean(y_raw)), float(np.std(y_raw))
    a0 = 2 * (x - lo) / (hi - lo) - 1
    y = (y_raw - y_mu) / y_sd
    sizes = [d, *hidden, 1]
    theta = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        theta += [rng.normal(0, np.sqrt(2 / (n_in + n_out)), n_in * n_out), np.zeros(n_out)]
    train_part, val_part = slice(0, n_train), slice(n_train, None)
    fit = minimize(
        _loss,
        np.concatenate(theta),
        args=(sizes, activation, a0[train_part], y[train_part]),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": iterations},
    )
    weights, biases = _unpack(fit.x, sizes)
    val = _forward(fit.x, sizes, activation, a0[val_part])[1][-1][:, 0] * y_sd + y_mu
    val_rmse = float(np.sqrt(np.mean((val - y_raw[val_part]) ** 2)))
    document = {
        "name": name,
        "layers": sizes,
        "W": [w.tolist() for w in weights],
        "b": [b.tolist() for b in biases],
        "in_lo": lo.tolist(),
        "in_hi": hi.tolist(),
        "y_mu": y_mu,
        "y_sd": y_sd,
        "activation": activation,
        "output_activation": "linear",
        "target": target.__name__.lstrip("_"),
        "seed": seed,
        "n_train": n_train,
        "train_iters": int(fit.nit),
        "val_rmse": val_rmse,
        "val_rmse_rel": val_rmse / float(np.ptp(y_raw)),
    }
    document.update(_best_known(fit.x, sizes, activation, lo, hi, y_mu, y_sd, seed))
    return document


def _best_known(theta, sizes, activation, lo, hi, y_mu, y_sd, seed) -> dict:
    """The lowest network value found: Sobol samples, then L-BFGS-B from the best 10."""

    def value(x):
        a0 = 2 * (np.atleast_2d(x) - lo) / (hi - lo) - 1
        return _forward(theta, sizes, activation, a0)[1][-1][:, 0] * y_sd + y_mu

    points = qmc.scale(qmc.Sobol(d=len(lo), seed=seed).random_base2(16), lo, hi)
    values = value(points)
    best_x, best_f = None, np.inf
    for start in points[np.argsort(values)[:10]]:
        polished = minimize(lambda x: float(value(x)[0]), start, method="L-BFGS-B", bounds=list(zip(lo, hi)))
        if polished.fun < best_f:
            best_x, best_f = polished.x, float(polished.fun)
    return {"best_known": best_f, "best_known_x": best_x.tolist(), "best_known_how": "Sobol 65536 + L-BFGS-B of 10"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--n-train", type=int, default=2000)
    parser.add_argument("--iterations", type=int, default=3000)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (target, lo, hi, hidden, activation, seed) in NETWORKS.items():
        document = train(name, target, lo, hi, hidden, activation, seed, args.n_train, args.iterations)
        (args.out / f"{name}.json").write_text(json.dumps(document))
        print(json.dumps({k: document[k] for k in ("name", "train_iters", "val_rmse_rel", "best_known")}), flush=True)


if __name__ == "__main__":
    main()
