"""Issue 37, item 5: RISE's parameter-randomisation sanity check. With the masks shared by the trained and the randomised
models (the authors' code), a randomised network that ignores its input gets the plain mask sum as its RISE map, and the
check measures how much the trained agent's map looks like that mask sum, not whether the map depends on the network. The
tests check the artefact, the fresh-mask and mean-mask-corrected variants that expose it, the benchmark table that reports
them side by side, and the scoreboard claim that scores the default variant and names the others."""
import json
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from rlexplain.attribution import RISE, Occlusion, explainer
from rlexplain.attribution.explainers.rise import _RISE
from rlexplain.core import Policy
from rlexplain.runtables import RunTables
from rlexplain.saliency_bench import (SANITY_VARIANTS, SanityCheck, cascading_randomization, sanity_check,
                                      sanity_scores, sanity_variants, spearman_similarity)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")   # constant randomised agents; all-NaN means


class OffsetNet(nn.Module):
    """Q(I) = b + w I[0, 5, 6] with a large common offset b (as DQN Q-values have); `reset_parameters()` sets w = 0 and draws
    b in [1, 2): the randomised network ignores its input."""
    def __init__(self):
        super().__init__(); self.w = nn.Parameter(torch.tensor([1.0, -1.0])); self.b = nn.Parameter(torch.tensor([20.0, 20.5]))
    def reset_parameters(self):
        with torch.no_grad(): self.w.zero_(); self.b.uniform_(1.0, 2.0)
    def forward(self, x): return self.b + self.w * x[:, 0, 5, 6, None]


KW = dict(n_samples=200, s=4)   # RISE on 16 x 16 images


@pytest.fixture(scope="module")
def offset():
    torch.set_num_threads(1)
    return Policy.from_module(nn.Sequential(OffsetNet()), (1, 16, 16), device="cpu")


@pytest.fixture(scope="module")
def states():
    return np.random.default_rng(0).random((4, 1, 16, 16), dtype=np.float32)


def _mask_sum(n=4):
    return np.broadcast_to(explainer("rise", **KW).masks(16, 16).sum(0).numpy(), (n, 16, 16))


def test_mean_mask_correction_by_hand():
    "normalize='coverage': sum_i q_i M_i / sum_i M_i per pixel; a constant output c gives exactly c; the default is Eq. A3."
    lin = Policy.from_module(nn.Sequential(nn.Flatten(), nn.Linear(36, 2)), (1, 6, 6), device="cpu")
    x = np.random.default_rng(1).random((1, 1, 6, 6), np.float32)
    r, rc = _RISE(n_samples=20, s=2, p=0.5), _RISE(n_samples=20, s=2, p=0.5, normalize="coverage")
    m = r.masks(6, 6).double()
    q = lin.module(torch.from_numpy(x) * m.float()[:, None]).detach()[:, 1].double()
    np.testing.assert_allclose(rc(lin, x, 1).pixels()[0], ((q[:, None, None] * m).sum(0) / m.sum(0)).numpy(), rtol=1e-5)
    np.testing.assert_allclose(r(lin, x, 1).pixels()[0], ((q[:, None, None] * m).sum(0) / (20 * 0.5)).numpy(), rtol=1e-5)
    const = Policy.from_module(nn.Sequential(nn.Flatten(), nn.Linear(36, 2)), (1, 6, 6), device="cpu")
    with torch.no_grad(): const.module[1].weight.zero_(); const.module[1].bias.copy_(torch.tensor([3.0, 0.0]))
    np.testing.assert_array_equal(rc(const, x, 0).pixels()[0], np.full((6, 6), 3.0, np.float32))   # flat: no mask sum left
    np.testing.assert_allclose(r(const, x, 0).pixels()[0], (3.0 * m.mean(0) / 0.5).numpy(), rtol=1e-5)   # Eq. A3: the mask sum
    assert explainer("rise", n_samples=20, s=2, normalize="coverage").explain(lin, x, 1).params["normalize"] == "coverage"
    with pytest.raises(ValueError, match="normalize must be one of"): _RISE(normalize="mean")


def test_shared_masks_make_a_randomised_rise_map_the_mask_sum(offset, states):
    """The randomised network ignores its input: its RISE map is a multiple of the mask sum (Spearman 1), so with shared masks the
    sanity similarity is the trained map's own correlation with the mask sum (about 1: the check is fooled); with fresh masks per
    model it falls to about 0.1; with the mean-mask correction the randomised maps are flat (NaN: nothing to compare)."""
    rand = cascading_randomization(offset, seed=0)[0][1]
    np.testing.assert_allclose(spearman_similarity(RISE.preset("huber2022", **KW).explain(rand, states).pixels(), _mask_sum()), 1.0, atol=1e-3)
    orig = RISE.preset("huber2022", **KW).explain(offset, states).pixels()
    shared = sanity_check(offset, states, "rise", metrics=("spearman",), **KW).table
    fresh = sanity_check(offset, states, "rise", metrics=("spearman",), masks="fresh", **KW).table
    corr = sanity_check(offset, states, "rise", metrics=("spearman",), normalize="coverage", **KW).table
    np.testing.assert_allclose(shared.value, spearman_similarity(orig, _mask_sum()), atol=1e-3)
    assert (shared.value > 0.95).all() and (fresh.value < 0.3).all(), (shared.value, fresh.value)
    assert corr.value.isna().all()
    assert set(shared.variant) == {"shared"} and set(fresh.variant) == {"fresh"}
    with pytest.raises(ValueError, match="masks must be one of"): sanity_check(offset, states, "rise", masks="new", **KW)
    with pytest.raises(ValueError, match="needs an explainer with a `seed`"): sanity_check(offset, states, "occlusion", masks="fresh")


def test_benchmark_reports_rise_variants_side_by_side(offset, states):
    "sanity_variants: the default's rows are sanity_scores' rows bit for bit; RISE adds its three variants; others add none."
    ref = RISE.preset("huber2022", n_samples=30, s=4).explain(offset, states[:2])
    tab, steps = sanity_variants(offset, states[:2], ref, "rise", ("spearman",), 0, None, False, "g")
    assert list(dict.fromkeys(tab.variant)) == ["shared", *SANITY_VARIANTS["rise"]]
    base = sanity_scores(offset, states[:2], RISE.preset("huber2022", n_samples=30, s=4).explain(offset, states[:2]), "rise", ("spearman",), 0, None, False, "g")[0]
    pd.testing.assert_frame_equal(tab[tab.variant == "shared"].reset_index(drop=True), base)
    s = SanityCheck(tab, steps).summary()
    assert {"method", "variant", "metric", "n_randomized", "mean"} <= set(s.columns) and len(s) == 4
    import matplotlib; matplotlib.use("Agg"); import matplotlib.pyplot as plt
    fig = SanityCheck(tab, steps).plot()
    assert {"RISE", "RISE (fresh)", "RISE (shared+coverage)", "RISE (fresh+coverage)"} <= {l.get_label() for l in fig.axes[0].get_lines()}
    plt.close(fig)
    occ = sanity_variants(offset, states[:2], Occlusion.preset("huber2022", patch=4).explain(offset, states[:2]), "occlusion", ("spearman",), 0, None, False, "g")[0]
    assert set(occ.variant) == {"shared"}
    old = SanityCheck(tab[tab.variant == "shared"].drop(columns="variant")).summary()   # a table saved before the variants
    assert set(old.variant) == {"shared"}


def _run(tmp_path, variants: bool):
    "A demo-scale run whose sanity summary has RISE shared 0.83 (fails 0.5), fresh 0.10 and the corrected variants."
    r = tmp_path / ("new" if variants else "old"); (r / "saliency_bench").mkdir(parents=True)
    (r / "config.json").write_text(json.dumps({"scale": "demo"}))
    rows = [("occlusion", "shared", 0.10), ("sarfa", "shared", 0.20), ("rise", "shared", 0.83)]
    if variants: rows += [("rise", "fresh", 0.10), ("rise", "shared+coverage", 0.15), ("rise", "fresh+coverage", 0.05)]
    df = pd.DataFrame([dict(method=m, variant=v, metric="spearman", n_randomized=3, layer="0", mean=x, std=0.05, n=32) for m, v, x in rows])
    (df if variants else df.drop(columns="variant")).to_csv(r / "saliency_bench" / "saliency_bench_sanity_summary.csv", index=False)
    return RunTables(r)


def test_claim_scores_the_default_and_names_the_other_variants(tmp_path):
    "sal-parameter-dependence: contradicted by RISE's shared-mask 0.83; its reason names fresh 0.1 and the corrected values."
    from rlexplain.scoreboard import load_claims, score_claim
    c = load_claims().set_index("id").loc["sal-parameter-dependence"].to_dict()
    new = score_claim(c, _run(tmp_path, True))
    assert new["verdict"] == "contradicted" and "rise (shared masks" in new["reason"], new
    for v, x in (("fresh", "0.1"), ("shared+coverage", "0.15"), ("fresh+coverage", "0.05")): assert f"{v} {x}" in new["reason"], new["reason"]
    old = score_claim(c, _run(tmp_path, False))   # a run made before the variants: its rows are the shared masks
    assert old["verdict"] == "contradicted" and "rise 0.83" in old["reason"] and "fresh" not in old["reason"], old


def test_per_state_values_of_saved_jobs_score_the_default_variant(tmp_path):
    """The per-state sanity table the study writes (`state_tables` -> saliency_bench_sanity_states.csv): the default's values are
    scored (paired by game and state); a job saved before the variants reads as the shared draws."""
    from rlexplain.measures import MEASURES
    from rlexplain.saliency_tables import state_tables
    run = _run(tmp_path, True)
    rows = lambda m, v, x: [dict(game="ALE/MsPacman-v5", method=m, variant=v, n_randomized=3, layer="0", state=s, metric="spearman", value=x + 0.01 * s) for s in range(4)]
    old_job = pd.DataFrame(rows("occlusion", "shared", 0.1)).drop(columns="variant")   # saved before the variants
    san = pd.concat([pd.DataFrame(rows("rise", "shared", 0.8) + rows("rise", "fresh", 0.1)), old_job], ignore_index=True)
    _, states = state_tables(pd.DataFrame(columns=["game", "method", "state", "sub_metric", "auc"]), san)
    states.to_csv(run.path / "saliency_bench" / "saliency_bench_sanity_states.csv", index=False)
    es = MEASURES["sal.sanity"](run, metric="spearman", layers="all", methods=["occlusion", "rise"], variants=True)
    assert [e.n for e in es] == [4, 4] and es[0].label == "occlusion" and es[0].mean == pytest.approx(0.115)
    assert es[1].mean == pytest.approx(0.815) and es[1].paired and "fresh 0.115" in es[1].label, es[1].label
    assert MEASURES["sal.sanity"](run, metric="spearman", layers="all", methods=["rise"])[0].label == "rise"   # variants off: the label alone
