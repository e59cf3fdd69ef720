"""t975.py — Student's t quantile t_{0.975, df} for df = 1..10, the values of mcl_t975
(src/learn/metrics.c), for the Python scripts that give 95 % intervals (bench-shared.py, and
bench-ab.py through it; bench-ratio-table.py; tests/check-doc-numbers.py). tools/bundle/gpu-check.sh keeps an awk
copy, as it runs where Python may be missing; tests/test-gpu-check.sh holds all of them to
`metacl stats ci`."""

import math

T975 = [12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157,
        2.228139]


def t975(df):
    """t_{0.975, df} for df in 1..10; ValueError outside"""
    if not 1 <= df <= len(T975):
        raise ValueError("t975 for %d degrees of freedom (1..%d)" % (df, len(T975)))
    return T975[df - 1]


def half_width(x):
    """the 95 % half-width of the mean of the values x (2 to 11 of them)"""
    n = len(x)
    if n < 2:
        raise ValueError("a 95 % interval needs 2 values or more, not %d" % n)
    m = sum(x) / n
    sd = (sum((v - m) ** 2 for v in x) / (n - 1)) ** 0.5
    return t975(n - 1) * sd / n ** 0.5


def geo_interval(ratios):
    """(geometric mean, [lo, hi]) of positive ratios: the 95 % interval of the mean of their
    logarithms (Student's t), taken back by exp; [lo, hi] is None below 2 values or above 11"""
    logs = [math.log(v) for v in ratios]
    mean = sum(logs) / len(logs)
    if not 2 <= len(logs) <= len(T975) + 1:
        return math.exp(mean), None
    h = half_width(logs)
    return math.exp(mean), [math.exp(mean - h), math.exp(mean + h)]
