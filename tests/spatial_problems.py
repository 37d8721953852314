"""Spatial test problems built with TapeBuilder: the peaks ANN of the seed paper, six-hump camel."""

from __future__ import annotations

import json
from pathlib import Path

from pbbflow.spatial.tape import Op, Tape, TapeBuilder

SPATIAL_DATA = Path("/work/shared/data/spatial")
PEAKS_ANN = SPATIAL_DATA / "peaks-ann-2-10-8-1.json"


def peaks_ann_tape(path: Path = PEAKS_ANN) -> tuple[Tape, dict]:
    """The 2-10-8-1 tanh network of the README as a tape: a = x / 3, two tanh layers, a linear
    output scaled by y_sd and shifted by y_mu (W[k] is (out, in))."""
    net = json.loads(path.read_text())
    builder = TapeBuilder(2)
    half_range = builder.const((net["in_hi"] - net["in_lo"]) / 2)
    layer = [builder.binary(Op.DIV, builder.var(i), half_range) for i in range(2)]
    for k, (weights, bias) in enumerate(zip(net["W"], net["b"])):
        outputs = []
        for row, b in zip(weights, bias):
            total = builder.const(b)
            for w, a in zip(row, layer):
                total = builder.binary(Op.ADD, total, builder.binary(Op.MUL, builder.const(w), a))
            outputs.append(builder.unary(Op.TANH, total) if k < len(net["W"]) - 1 else total)
        layer = outputs
    y = builder.binary(Op.MUL, layer[0], builder.const(net["y_sd"]))
    y = builder.binary(Op.ADD, y, builder.const(net["y_mu"]))
    return builder.build(y), net


def six_hump_camel():
    """(4 - 2.1 x^2 + x^4 / 3) x^2 + x y + (-4 + 4 y^2) y^2, global minimum -1.0316284534898774."""
    b = TapeBuilder(2)
    x, y = b.var(0), b.var(1)
    x2 = b.powi(x, 2)
    inner = b.binary(Op.ADD, b.binary(Op.SUB, b.const(4.0), b.binary(Op.MUL, b.const(2.1), x2)),
                     b.binary(Op.DIV, b.powi(x, 4), b.const(3.0)))
    y2 = b.powi(y, 2)
    f = b.binary(Op.ADD, b.binary(Op.ADD, b.binary(Op.MUL, inner, x2), b.binary(Op.MUL, x, y)),
                 b.binary(Op.MUL, b.binary(Op.ADD, b.const(-4.0), b.binary(Op.MUL, b.const(4.0), y2)), y2))
    return b.build(f)
