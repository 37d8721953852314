"""Taillard's permutation flow-shop benchmarks ta001 … ta120, regenerated from the published seeds.

E. Taillard, "Benchmarks for basic scheduling problems", EJOR 64(2):278-285, 1993.
Times ``d[machine][job] = U(1, 99)`` are drawn machine by machine, job by job, from a Lehmer
generator ``X <- 16807 X mod (2^31 - 1)`` (Schrage's method) started at the instance's time seed.
"""

from __future__ import annotations

import math
from functools import cache
from types import MappingProxyType

import numpy as np

from .instance import FlowShop, InstanceError

_M, _A, _B, _C = 2**31 - 1, 16807, 127773, 2836  # modulus, multiplier, m // a, m % a

_GROUP_SIZES = (  # (n jobs, m machines) of ta001-010, ta011-020, ..., ta111-120
    (20, 5),
    (20, 10),
    (20, 20),
    (50, 5),
    (50, 10),
    (50, 20),
    (100, 5),
    (100, 10),
    (100, 20),
    (200, 10),
    (200, 20),
    (500, 20),
)

_TIME_SEEDS = (  # one row per size group, in the order of _GROUP_SIZES
    873654221,
    379008056,
    1866992158,
    216771124,
    495070989,
    402959317,
    1369363414,
    2021925980,
    573109518,
    88325120,
    587595453,
    1401007982,
    873136276,
    268827376,
    1634173168,
    691823909,
    73807235,
    1273398721,
    2065119309,
    1672900551,
    479340445,
    268827376,
    1958948863,
    918272953,
    555010963,
    2010851491,
    1519833303,
    1748670931,
    1923497586,
    1829909967,
    1328042058,
    200382020,
    496319842,
    1203030903,
    1730708564,
    450926852,
    1303135678,
    1273398721,
    587288402,
    248421594,
    1958948863,
    575633267,
    655816003,
    1977864101,
    93805469,
    1803345551,
    49612559,
    1899802599,
    2013025619,
    578962478,
    1539989115,
    691823909,
    655816003,
    1315102446,
    1949668355,
    1923497586,
    1805594913,
    1861070898,
    715643788,
    464843328,
    896678084,
    1179439976,
    1122278347,
    416756875,
    267829958,
    1835213917,
    1328833962,
    1418570761,
    161033112,
    304212574,
    1539989115,
    655816003,
    960914243,
    1915696806,
    2013025619,
    1168140026,
    1923497586,
    167698528,
    1528387973,
    993794175,
    450926852,
    1462772409,
    1021685265,
    83696007,
    508154254,
    1861070898,
    26482542,
    444956424,
    2115448041,
    118254244,
    471503978,
    1215892992,
    135346136,
    1602504050,
    160037322,
    551454346,
    519485142,
    383947510,
    1968171878,
    540872513,
    2013025619,
    475051709,
    914834335,
    810642687,
    1019331795,
    2056065863,
    1342855162,
    1325809384,
    1988803007,
    765656702,
    1368624604,
    450181436,
    1927888393,
    1759567256,
    606425239,
    19268348,
    1298201670,
    2041736264,
    379756761,
    28837162,
)

TAILLARD_SIZES = MappingProxyType({k + 1: _GROUP_SIZES[k // 10] for k in range(120)})
"""Instance number (1..120) -> (n jobs, m machines)."""

TAILLARD_SEEDS = MappingProxyType({k + 1: seed for k, seed in enumerate(_TIME_SEEDS)})
"""Instance number (1..120) -> Taillard's published time seed."""


def _unif(seed: int, low: int, high: int) -> tuple[int, int]:
    """Advance the Lehmer generator once; return ``(new seed, integer in [low, high])``."""
    k = seed // _B
    seed = _A * (seed % _B) - k * _C
    if seed < 0:
        seed += _M
    return seed, low + math.floor(seed / _M * (high - low + 1))


def taillard_times(seed: int, n: int, m: int) -> np.ndarray:
    """Taillard's times from ``seed`` as an (n, m) job-major array (generated machine by machine)."""
    d = np.empty((m, n), dtype=np.int32)
    for machine in range(m):
        for job in range(n):
            seed, d[machine, job] = _unif(seed, 1, 99)
    return d.T


@cache
def taillard_instance(number: int) -> FlowShop:
    """Taillard instance ``ta<number>`` (1..120), named ``"ta%03d"``."""
    if number not in TAILLARD_SIZES:
        raise InstanceError(f"ta{number:03d}", "no such Taillard instance (Taillard instances are ta001..ta120)")
    n, m = TAILLARD_SIZES[number]
    return FlowShop(f"ta{number:03d}", taillard_times(TAILLARD_SEEDS[number], n, m))
