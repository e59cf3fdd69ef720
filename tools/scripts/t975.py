"""t975.py — Student's t quantile t_{0.975, df} for any df >= 1, the values of mcl_t975
(src/learn/metrics.c), for the Python scripts that give 95 % intervals (bench-shared.py, and
bench-ab.py through it; bench-ratio-table.py; tests/check-doc-numbers.py). tools/bundle/gpu-check.sh keeps an awk
copy, as it runs where Python may be missing; tests/test-gpu-check.sh holds all of them to
`metacl stats ci`."""

import math

T975 = [12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157,
        2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922,
        2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831,
        2.048407, 2.045230, 2.042272]
# above 30 degrees of freedom: linear in 1/df between these (as mcl_t975)
_AT = [30.0, 40.0, 60.0, 120.0, math.inf]
_TV = [2.042272, 2.021075, 2.000298, 1.979930, 1.959964]


def t975(df):
    """t_{0.975, df} for df >= 1 (the table to 30, then mcl_t975's interpolation); ValueError below"""
    if df < 1:
        raise ValueError("t975 for %d degrees of freedom (1 or more)" % df)
    if df <= len(T975):
        return T975[df - 1]
    u = 1.0 / df
    for i in range(4):
        u0, u1 = 1.0 / _AT[i], (0.0 if math.isinf(_AT[i + 1]) else 1.0 / _AT[i + 1])
        if u1 <= u <= u0:
            return _TV[i + 1] + (_TV[i] - _TV[i + 1]) * (u - u1) / (u0 - u1)
    return _TV[4]


def half_width(x):
    """the 95 % half-width of the mean of the values x (2 or more of them)"""
    n = len(x)
    if n < 2:
        raise ValueError("a 95 % interval needs 2 values or more, not %d" % n)
    m = sum(x) / n
    sd = (sum((v - m) ** 2 for v in x) / (n - 1)) ** 0.5
    return t975(n - 1) * sd / n ** 0.5


def geo_interval(ratios):
    """(geometric mean, [lo, hi]) of positive ratios: the 95 % interval of the mean of their
    logarithms (Student's t), taken back by exp; [lo, hi] is None below 2 values"""
    logs = [math.log(v) for v in ratios]
    mean = sum(logs) / len(logs)
    if len(logs) < 2:
        return math.exp(mean), None
    h = half_width(logs)
    return math.exp(mean), [math.exp(mean - h), math.exp(mean + h)]
