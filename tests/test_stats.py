"""rlexplain.stats on arrays small enough to check by hand: each expected number is worked out in the comment beside it."""
import math

import numpy as np
import pytest
from scipy import stats as sps

from rlexplain import stats as st


def test_t_interval_by_hand():
    # (1, 2, 3): mean 2, s = 1, se = 1/sqrt(3); t_{2, 0.95} = 2.919986 -> 90% interval 2 +- 1.6859 = [0.3141, 3.6859]
    e = st.t_interval([1.0, 2.0, 3.0], 0.90)
    assert (e.value, e.n, e.df, e.level, e.test) == (2.0, 3, 2, 0.90, "t")
    assert e.low == pytest.approx(2 - 2.919986 / math.sqrt(3), abs=1e-6) and e.high == pytest.approx(2 + 2.919986 / math.sqrt(3), abs=1e-6)
    assert e.se == pytest.approx(1 / math.sqrt(3))
    # t_bounds is the same per column of an (M, ...) array; column 2 is 10x column 1, so its interval is 10x as wide
    lo, hi = st.t_bounds(np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]]), 0.90)
    assert lo[0] == pytest.approx(e.low)                                              # column 1 is the sample above
    assert hi - lo == pytest.approx([2 * 1.6859, 20 * 1.6859], abs=1e-3)
    assert st.t_interval([1.0, np.nan, 2.0, 3.0], 0.90) == e                         # NaN is left out
    with pytest.raises(ValueError, match="at least 2"): st.t_interval([1.0, np.nan])
    with pytest.raises(ValueError, match="level"): st.t_bounds([1.0, 2.0], 1.0)


def test_paired_t_on_three_differences_by_hand():
    # a - b = (2, 3, 4): mean 3, s_d = 1, se = 1/sqrt(3), t_{2, 0.975} = 4.302653 -> 3 +- 2.4841 = [0.5159, 5.4841]
    p = st.paired_t([3.0, 5.0, 7.0], [1.0, 2.0, 3.0])
    assert (p.value, p.n, p.df, p.test) == (3.0, 3, 2, "paired-t")
    assert (p.low, p.high) == pytest.approx((3 - 4.302653 / math.sqrt(3), 3 + 4.302653 / math.sqrt(3)), abs=1e-6)
    # t = 3 / (1/sqrt(3)) = 5.196 on 2 df: two-sided p = 0.0351
    assert p.pvalue == pytest.approx(2 * sps.t.sf(3 * math.sqrt(3), 2)) and p.sign == 1
    # a pair with a NaN is left out; unequal lengths are refused
    assert st.paired_t([3.0, 5.0, 7.0, np.nan], [1.0, 2.0, 3.0, 0.0]) == p
    with pytest.raises(ValueError, match="same units"): st.paired_t([1.0, 2.0, 3.0], [1.0, 2.0])
    # equal differences (up to float rounding) are exact: the difference itself, no division by a rounding error
    e = st.paired_t([0.3, 0.7, 1.1], [0.2, 0.6, 1.0])
    assert e.low == e.high == pytest.approx(0.1) and e.se == 0.0


def test_welch_by_hand_from_values_and_from_summaries():
    # (1, 2, 3) vs (4, 6, 8): means 2, 6; s^2 = 1, 4; se^2 = 1/3 + 4/3 = 5/3; df = (5/3)^2 / ((1/3)^2/2 + (4/3)^2/2) = 50/17
    w = st.welch([1.0, 2.0, 3.0], [4.0, 6.0, 8.0])
    assert w.value == -4.0 and w.df == pytest.approx(50 / 17) and w.se ** 2 == pytest.approx(5 / 3) and w.test == "welch"
    h = sps.t.ppf(0.975, 50 / 17) * math.sqrt(5 / 3)
    assert (w.low, w.high) == pytest.approx((-4 - h, -4 + h))
    s = st.welch_from_se(2.0, 1 / math.sqrt(3), 2, 6.0, 2 / math.sqrt(3), 2)
    assert (s.low, s.high, s.df) == pytest.approx((w.low, w.high, w.df))
    assert st.welch_df(0.0, 3, 0.0, 5) == (0.0, math.inf)
    assert st.welch_df(1.0, math.inf, 0.0, 3) == (1.0, math.inf)     # a known variance has no df term: normal


def test_pairing_decides_where_welch_on_the_summaries_leaves_it_open():
    # four states that differ a lot; b above a by 0.1 or 0.2 on each. Summaries: means 2.5 and 2.65, s 1.29 each: Welch's
    # 95% interval -0.15 +- 2.26 contains 0. Paired: d = (-.1, -.2, -.1, -.2), mean -0.15, s_d 0.0577, t_{3, .975} 3.1824:
    # -0.15 +- 0.0919 = [-0.2419, -0.0581], wholly below 0
    a = np.array([1.0, 2.0, 3.0, 4.0]); b = a + np.array([0.1, 0.2, 0.1, 0.2])
    w = st.welch_from_se(a.mean(), a.std(ddof=1) / 2, 3, b.mean(), b.std(ddof=1) / 2, 3)
    p = st.paired_t(a, b)
    assert w.sign == 0 and p.sign == -1
    assert (p.low, p.high) == pytest.approx((-0.15 - 3.182446 * 0.0577350 / 2, -0.15 + 3.182446 * 0.0577350 / 2), abs=1e-5)


def test_t_from_se_and_quantiles():
    e = st.t_from_se(2.0, 0.5, 4, 0.95, n=5)
    assert (e.low, e.high) == pytest.approx((2 - 2.776445 * 0.5, 2 + 2.776445 * 0.5), abs=1e-6)   # t_{4, .975} = 2.776445
    assert st.t_quantile(0.95, math.inf) == pytest.approx(1.959964, abs=1e-6)
    x = st.t_from_se(0.3, 0.0, math.inf)
    assert x.test == "exact" and x.low == x.high == 0.3
    with pytest.raises(ValueError, match="se"): st.t_from_se(1.0, -1.0, 3)
    with pytest.raises(ValueError, match="test"): st.t_from_se(1.0, 1.0, 3, test="z")


def test_bonferroni_and_holm_by_hand():
    assert st.bonferroni_level(0.95, 4) == pytest.approx(0.9875)
    with pytest.raises(ValueError, match="m must"): st.bonferroni_level(0.95, 0)
    # Holm on (0.01, 0.04, 0.03): sorted 0.01 * 3 = 0.03 <= 0.05 rejects; 0.03 * 2 = 0.06 > 0.05 stops; adjusted (0.03, 0.06, 0.06)
    rej, adj = st.holm([0.01, 0.04, 0.03])
    assert list(rej) == [True, False, False] and adj == pytest.approx([0.03, 0.06, 0.06])
    with pytest.raises(ValueError, match="p-values"): st.holm([0.5, 1.5])


def test_jackknife_of_the_mean_is_the_t_interval():
    # leave-one-out means of (1, 2, 3, 6): 11/3, 10/3, 3, 2; their jackknife se equals s / sqrt(n) = 2.1602 / 2 = 1.0801
    j, t = st.jackknife([1.0, 2.0, 3.0, 6.0]), st.t_interval([1.0, 2.0, 3.0, 6.0])
    assert j.se == pytest.approx(math.sqrt(14 / 3) / 2) and (j.low, j.high) == pytest.approx((t.low, t.high)) and j.test == "jackknife-t"
    with pytest.raises(ValueError, match="at least 3"): st.jackknife([1.0, 2.0])


def test_bootstrap_is_seeded_and_refuses_few_units():
    v = np.linspace(0, 1, 40)
    a, b = st.bootstrap(v), st.bootstrap(v)
    assert a == b and a.test == "bootstrap" and a.low < 0.5 < a.high
    with pytest.raises(ValueError, match="min_n"): st.bootstrap([1.0, 2.0, 3.0])


def _ar1_runs(rho, episodes, per, sims, seed):
    rng = np.random.default_rng(seed)
    for _ in range(sims):
        out = []
        for _ in range(episodes):
            x = np.empty(per); x[0] = rng.normal() / np.sqrt(1 - rho ** 2)
            for i in range(1, per): x[i] = rho * x[i - 1] + rng.normal()
            out.append(x)
        yield np.concatenate(out)


@pytest.mark.parametrize("rho", [0.8, 0.0])
@pytest.mark.parametrize("layout", [(10, 20), (4, 50)])
def test_state_intervals_hold_their_coverage_when_states_are_correlated_within_episodes(rho, layout):
    """Issue 50.2: paired differences AR(1) within episodes (rho 0.8) or independent, true mean 0, 2,000 runs: the 95%
    cluster-t interval (by episode, and by 40-state blocks where episodes are not recorded) covers 0 in at least 93% of
    them; the naive paired t does not in the correlated case (so this test can fail)."""
    from rlexplain.stats import clustered_t, state_clusters, t_interval
    episodes, per = layout; ep = np.repeat(np.arange(episodes), per)
    hits = np.zeros(3)
    for d in _ar1_runs(rho, episodes, per, 2000, seed=7):
        ivs = (t_interval(d), clustered_t(d, ep), clustered_t(d, state_clusters(len(d))))
        hits += [iv.low <= 0 <= iv.high for iv in ivs]
    naive, by_episode, by_block = hits / 2000
    assert by_episode >= 0.93 and by_block >= 0.93, (naive, by_episode, by_block)
    if rho > 0: assert naive < 0.8, naive
    else: assert naive >= 0.93, naive
