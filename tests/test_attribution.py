"Tests of rlexplain.attribution: the one explainer verb, the metric registry, the shared primitives, and the papers' defaults."
import numpy as np
import pytest
import scipy.ndimage
import torch
from torch import nn

from rlexplain import saliency, saliency_bench, xrlbench
from rlexplain.attribution import (EXPLAINERS, METRICS, SARFA, Attribution, Explainer, MetricResult, NoiseSensitivity, Occlusion,
                                   explain, gaussian_blur, resolve_actions, score)
from rlexplain.core import Policy
from test_xrlbench import linear_policy   # Q(x) = W x + b as a Policy


def _fitted(name, policy, background=None, **params):
    "The explainer `name` with `params`, fitted to `policy` and `background` (`fit`)."
    from rlexplain.attribution import explainer
    return explainer(name, **params).fit(policy, background)

torch.set_num_threads(1)

FAST = {"occlusion": dict(patch=4), "noise_sensitivity": dict(radius=4), "sarfa": dict(radius=4), "rise": dict(n_samples=20, s=4),
        "lime_slic": dict(n_samples=30, n_segments=10), "lime_quickshift": dict(n_samples=30),
        "lime_felzenszwalb": dict(n_samples=30), "perturbation_saliency": dict(stride=4),
        "deep_shap": dict(n_background=3), "gradient_shap": dict(n_background=3, n_samples=10),
        "integrated_gradients": dict(n_background=2, n_steps=5), "random": {}}


@pytest.fixture(scope="module")
def cnn():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(2, 4, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 7 * 7, 3))
    pol = Policy.from_module(net, (2, 16, 16), device="cpu")
    return pol, np.random.default_rng(0).random((3, 2, 16, 16)).astype(np.float32)


def test_registries_are_complete_and_directed():
    assert len(EXPLAINERS) >= 12 and len(METRICS) >= 8
    for name in ("occlusion", "noise_sensitivity", "sarfa", "rise", "lime_slic", "lime_quickshift", "lime_felzenszwalb",
                 "tabular_shap", "tabular_lime", "perturbation_saliency", "deep_shap", "gradient_shap", "integrated_gradients"):
        assert name in EXPLAINERS and EXPLAINERS[name].source
    for name in ("AIM", "AUM", "PGI", "PGU", "RIS", "insertion_black_q", "insertion_random_advantage", "sanity_spearman",
                 "sanity_ssim", "sanity_hog"):
        assert name in METRICS
    for m in METRICS.values(): assert isinstance(m.higher_is_better, bool) and m.source
    assert not METRICS["AIM"].higher_is_better and METRICS["AUM"].higher_is_better and not METRICS["sanity_ssim"].higher_is_better


def test_every_image_explainer_fits_the_states_and_is_scored(cnn):
    pol, x = cnn
    for name, cls in EXPLAINERS.items():
        if "image" not in cls.modalities: continue
        att = explain(name, pol, x, **FAST[name])
        assert isinstance(att, Attribution) and att.values.shape == x.shape and att.method == name
        np.testing.assert_array_equal(att.actions, pol.outputs(x).numpy().argmax(1))
        aim = score("AIM", pol, x, att)
        ins = score("insertion_black_q", pol, x, att)
        assert isinstance(aim, MetricResult) and 0 <= aim.value <= 1 and aim.per_state.shape == (3,)
        assert np.isfinite(ins.value) and ins.higher_is_better


def test_pixel_methods_keep_their_maps(cnn):
    "A pixel-map method's attribution sums over frames to the saliency lesson's map, bit for bit."
    pol, x = cnn
    from rlexplain.attribution.explainers.occlusion import _occlusion   # the methods' own computations, in their own modules
    from rlexplain.attribution.explainers.sarfa import _sarfa
    np.testing.assert_array_equal(explain("occlusion", pol, x, patch=4).pixels(), _occlusion(pol, x, patch=4).pixels())
    np.testing.assert_array_equal(Occlusion(patch=4).explain(pol, x).values, _occlusion(pol, x, patch=4).values)
    np.testing.assert_array_equal(explain("sarfa", pol, x, radius=4).pixels(), _sarfa(pol, x, radius=4).pixels())


def test_tabular_only_refuses_images(cnn):
    pol, x = cnn
    for name in ("tabular_shap", "tabular_lime"):
        with pytest.raises(ValueError, match="explains tabular states only"): explain(name, pol, x)
    with pytest.raises(LookupError, match="known: occlusion"): explain("shapley", pol, x)
    with pytest.raises(ValueError, match="image attributions only"):
        score("insertion_black_q", linear_policy(np.eye(2, 3)), np.ones((2, 3), np.float32),
              Attribution(np.ones((2, 3)), [0, 0], "x"))


def test_tabular_explainers_and_metrics_hand_checks():
    "Q = (x0, -x0): every tabular explainer puts the most weight on x0; the exact attribution has AIM 0 and AUM 1."
    pol = linear_policy([[1, 0, 0, 0], [-1, 0, 0, 0]])
    B = np.random.default_rng(1).normal(size=(400, 4)).astype(np.float32)
    X = B.copy(); X[:, 0] = -np.abs(X[:, 0]) - 0.1            # greedy action 1 everywhere; masking x0 flips it to 0
    for name, cls in EXPLAINERS.items():
        if "tabular" not in cls.modalities or name == "random": continue
        kw = {"n_samples": 300} if name == "tabular_lime" else {}
        att = explain(name, pol, X[:20], background=B, **kw)
        assert att.values.shape == (20, 4) and np.abs(att.values).mean(0).argmax() == 0, name
    exact = Attribution(np.tile([1.0, 0, 0, 0], (len(X), 1)), pol.outputs(X).numpy().argmax(1), "exact")
    assert score("AIM", pol, X, exact).value == 0.0 and score("AUM", pol, X, exact).value == 1.0
    with pytest.raises(ValueError, match="shape"): score("AIM", pol, X[:5], exact)


def test_ris_variants_on_linear_ig():
    "For a linear Q and IG with a zero baseline, e = w_a x: the relative change of e equals that of x, so RIS = 1 (paper and code)."
    pol = linear_policy([[0.5, -1.0, 2.0, 0.3]])
    X = np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32) + 4.0
    att = explain("integrated_gradients", pol, X, baseline="zeros")
    for variant in ("paper", "code"):
        r = score("RIS", pol, X, att, variant=variant, n_neighbors=3)
        np.testing.assert_allclose(r.per_state, 1.0, rtol=1e-4)
        assert not r.higher_is_better and r.params["variant"] == variant


def test_sanity_similarity_of_a_fixed_map_is_one(cnn):
    "The random baseline does not depend on the network: its maps are identical after every randomisation (similarity 1)."
    pol, x = cnn
    att = explain("random", pol, x)
    r = score("sanity_spearman", pol, x, att)
    np.testing.assert_allclose(r.per_state, 1.0) ; assert len(r.curve) == 2      # two parametrised layers


def test_one_blur_and_one_sarfa_score():
    img = np.random.default_rng(0).random((2, 12, 14)).astype(np.float32)
    for mode in ("reflect", "nearest"):
        np.testing.assert_allclose(gaussian_blur(torch.tensor(img), 2.0, mode=mode).numpy(),
                                   scipy.ndimage.gaussian_filter(img, (0, 2.0, 2.0), mode=mode), atol=1e-5)
    assert saliency.gaussian_blur is gaussian_blur and xrlbench.gaussian_blur is gaussian_blur
    assert saliency.SARFA is SARFA and xrlbench.SARFA is SARFA
    for mod in (saliency, saliency_bench, xrlbench):
        assert not hasattr(mod, "_resolve_actions") and not hasattr(mod, "_as_states")
    q, qp = [2.0, 1.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.5]
    assert SARFA.score(q, qp, 0, kl="paper") != pytest.approx(SARFA.score(q, qp, 0, kl="code"))


def test_resolve_actions_and_bad_input(cnn):
    pol, x = cnn
    q = np.array([[0.0, 1.0, 0.5], [2.0, 0.0, 0.0]])
    np.testing.assert_array_equal(resolve_actions(None, q), [1, 0])
    with pytest.raises(ValueError, match=r"\[0, 3\)"): resolve_actions([0, 3], q)
    with pytest.raises(ValueError, match="states is empty"): explain("occlusion", pol, x[:0])
    with pytest.raises(ValueError, match="channel-first"): explain("occlusion", pol, np.moveaxis(x, 1, -1))
    with pytest.raises(TypeError, match="Attribution"): score("AIM", pol, x, x)
    with pytest.raises(ValueError, match="n_segments must be a number > 0"): explain("lime_slic", pol, x, n_segments=-5)


def test_xrlbench_defaults_are_the_papers_protocol():
    "Each default pinned to XRL-Bench's protocol (Xiong et al. 2024 and its code)."
    pol = linear_policy([[1, 0.5, 0, 0], [-1, 0, 0.2, 0]])
    X = np.random.default_rng(0).normal(size=(300, 4)).astype(np.float32)
    ps_att = explain("PS", pol, X[:10], background=X)
    assert xrlbench.AIM()(pol, X[:10], ps_att).params["order"] == "abs"         # rank by |importance|
    ris = xrlbench.RIS(n_neighbors=2)(pol, X[:10], ps_att).params
    assert (ris["variant"], ris["noise_std"]) == ("paper", 0.05)
    ps = _fitted("PS", pol, X); sa = _fitted("SARFA", pol, X)
    assert (ps.noise, ps.n_draws, sa.n_draws, sa.kl) == (0.05, 1, 1, "code")   # one N(0, 0.05 std) draw; the code's KL
    ts = _fitted("TabularSHAP", pol, X)
    assert ts.hparams == dict(num_leaves=31, learning_rate=0.05, n_estimators=1000, test_size=0.1, early_stopping_rounds=10)
    ig = _fitted("IG", pol, X)
    assert (ig.n_steps, ig.n_background, ig.background_seed) == (50, 100, 42)
    r = xrlbench.run_benchmark(pol, X, X[:10], methods=("PS",), n_ris=2, ris_neighbors=2)
    assert r.table.AIM.iloc[0] == xrlbench.AIM(feature_std=X.std(0))(pol, X[:10], ps_att).value
    with pytest.raises(ValueError, match="n_ris must be an int >= 0"): xrlbench.run_benchmark(pol, X, X[:10], n_ris=-5)
    with pytest.raises(ValueError, match="states is empty"): xrlbench.run_benchmark(pol, X, X[:0])


def test_attribution_result_roundtrip_and_plot(tmp_path, cnn):
    import matplotlib.pyplot as plt
    pol, x = cnn
    att = explain("occlusion", pol, x, patch=4)
    back = Attribution.load(att.save(tmp_path / "a"))
    np.testing.assert_array_equal(back.values, att.values); assert back.params["patch"] == 4
    ax = att.plot(index=1)
    assert f"action {att.actions[1]}" in ax.get_title() and len(ax.figure.axes) == 2     # the colour bar
    plt.close(ax.figure)
    assert len(att.to_frame()) == 3 * 16 * 16



def _assert_same_fields(att, back):
    "Every dataclass field of `back` equals `att`'s (arrays bit for bit with their dtype; the explainer as its class and parameters)."
    import dataclasses
    for f in dataclasses.fields(type(att)):
        a, b = getattr(att, f.name), getattr(back, f.name)
        if f.name == "explainer":
            assert type(b) is type(a) and {k: v for k, v in a.params.items() if not isinstance(v, np.ndarray)} == b.params, f.name
        elif isinstance(a, np.ndarray): assert a.dtype == b.dtype and np.array_equal(a, b), f.name
        else: assert a == b, (f.name, a, b)


def test_every_field_of_an_attribution_survives_save_and_load(tmp_path, cnn):
    "values, actions, params, states, timing, source, pixel_map, per_action and the explainer come back from save/load."
    pol, x = cnn
    att = explain("occlusion", pol, x, patch=4)
    assert att.pixel_map is not None and att.explainer is not None
    back = Attribution.load(att.save(tmp_path / "image"))
    _assert_same_fields(att, back)
    np.testing.assert_array_equal(back.pixels(), att.pixels())                          # the method's own map, bit for bit
    np.testing.assert_array_equal(explain(back.explainer, pol, x).values, att.values)  # the rebuilt explainer re-explains alike
    lin = linear_policy([[1.0, -2.0, 0.5], [0.0, 1.0, 0.0]])
    B = np.random.default_rng(0).normal(size=(30, 3)).astype(np.float32)
    tab = explain("integrated_gradients", lin, B[:4], background=B, n_background=5, all_actions=True)
    assert tab.per_action.shape == (4, 2, 3)
    back = Attribution.load(tab.save(tmp_path / "tabular"))
    _assert_same_fields(tab, back)
    assert "background" not in back.explainer.params                                   # data, not a setting: not saved

def test_huber_defaults_are_the_papers_protocol():
    "Each Huber et al. (2022) default pinned: final parameters (App. C.2) as presets, paper KL, trapezoid AUC, 84 pixels per step."
    from rlexplain.saliency import PAPER_PARAMS
    for key, (name, params) in PAPER_PARAMS.items():   # final parameters: the huber2022 preset; Table 10 / Sec. 5 variants: another preset
        assert any(params.items() <= p.items() for p in EXPLAINERS[name].presets.values()), key
        if key == name: assert params.items() <= EXPLAINERS[key].presets["huber2022"].items(), key
    assert EXPLAINERS["sarfa"].presets["huber2022"]["kl"] == "paper" and EXPLAINERS["sarfa"].presets["xrlbench"]["kl"] == "code"
    from rlexplain.saliency_study import BenchConfig
    cfg = BenchConfig()
    assert (cfg.auc, cfg.pixel_step, cfg.starts, cfg.ssim_flat) == ("trapezoid", 84, ("black", "random"), False)
    from rlexplain.attribution.explainers.rise import _RISE
    r = _RISE()
    assert (r.n_samples, r.s, r.p, r.softmax) == (1000, 8, 0.5, False) and saliency.RISE.presets["huber2022"] == {k: r.params[k] for k in ("n_samples", "s", "p", "softmax")}


def test_image_perturbation_saliency_is_noise_sensitivity(cnn):
    """XRL-Bench's image PS is Noise Sensitivity with XRL-Bench's parameters. Checked against its formula written out by hand:
    Gaussian blobs exp(-d^2 / 2 5^2) on a stride-5 grid mix in the image blurred with sigma 3 (edge replicated), the score is
    ||Q(x) - Q(x')||_2, resized bilinearly (half-pixel centres, no rescaling) and split evenly over the frames."""
    pol, x = cnn
    C, H, W = pol.obs_shape
    ys, xs = np.arange(0, H, 5), np.arange(0, W, 5)
    yy, xx = np.mgrid[0:H, 0:W]
    want = []
    for s in x:
        blur = scipy.ndimage.gaussian_filter(s, (0, 3, 3), mode="nearest")
        q = pol.outputs(s[None]).numpy()[0]
        grid = np.zeros((len(ys), len(xs)))
        for i, cy in enumerate(ys):
            for j, cx in enumerate(xs):
                m = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * 5.0 ** 2))
                grid[i, j] = np.linalg.norm(q - pol.outputs((s * (1 - m) + blur * m)[None].astype(np.float32)).numpy()[0])
        up = torch.nn.functional.interpolate(torch.tensor(grid, dtype=torch.float32)[None, None], size=(H, W), mode="bilinear",
                                             align_corners=False)[0, 0].numpy()
        want.append(np.repeat(up[None] / C, C, 0))
    want = np.stack(want)
    ps = _fitted("PS", pol).explain(pol, x).values
    np.testing.assert_allclose(ps, want, atol=1e-5)
    preset = explain(EXPLAINERS["noise_sensitivity"].preset("xrlbench"), pol, x)
    np.testing.assert_array_equal(preset.values, explain("perturbation_saliency", pol, x).values)
    np.testing.assert_array_equal(preset.values, ps)
    with pytest.raises(ValueError, match="mask must be one of"): NoiseSensitivity(mask="square").explain(pol, x)
    with pytest.raises(ValueError, match="blur_mode must be one of"): NoiseSensitivity(blur_mode="wrap").explain(pol, x)


LAYERS = ["_utils", "_base", "explainers.occlusion", "explainers.rise", "explainers.lime", "explainers.random_baseline", "explainers.fitted",
          "explainers.noise_sensitivity", "explainers.sarfa", "explainers.tabular_shap", "explainers.tabular_lime", "explainers.gradient",
          "explainers.deep_shap", "explainers.gradient_shap", "explainers.integrated_gradients", "explainers.presets",
          "metrics.fidelity", "metrics.robustness", "metrics.randomisation", "metrics.insertion"]   # low to high: a module may import only from those before it


def _package_imports() -> dict:
    "{module of rlexplain.attribution: [absolute names of the rlexplain modules it imports]} from the files' import statements."
    import ast
    from pathlib import Path
    import rlexplain.attribution as A
    root = Path(A.__file__).parent
    out = {}
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).with_suffix("")
        pkg = ["rlexplain", "attribution", *rel.parts[:-1]]
        name = ".".join(["rlexplain", "attribution", *rel.parts]).removesuffix(".__init__")
        deps = []
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = pkg[:len(pkg) - node.level + 1] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                deps += [mod] if node.module else [f"{mod}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import): deps += [a.name for a in node.names]
        out[name] = [d for d in deps if d.startswith("rlexplain")]
    return out


def test_the_package_is_layered_and_small():
    "At least 6 files, none over 800 lines; no module imports from a higher one (the __init__ files gather, they are the top)."
    from pathlib import Path
    import rlexplain.attribution as A
    files = list(Path(A.__file__).parent.rglob("*.py"))
    assert len(files) >= 6 and max(len(f.read_text().splitlines()) for f in files) <= 800
    order = [f"rlexplain.attribution.{m}" for m in LAYERS]
    for mod, deps in _package_imports().items():
        if mod not in order: continue                                   # a package __init__
        for d in deps:
            if d.startswith("rlexplain.attribution"):
                assert d in order and order.index(d) < order.index(mod), f"{mod} imports {d}, which is not below it"
            else: assert d in ("rlexplain.core", "rlexplain.runs", "rlexplain.compute"), (mod, d)   # the base layers only


def test_the_layer_is_low_and_each_method_lives_once():
    "rlexplain.attribution imports no lesson module; the lessons' method names are the layer's own objects."
    import rlexplain.attribution as A
    for mod, deps in _package_imports().items():
        for d in deps: assert d not in ("rlexplain.saliency", "rlexplain.saliency_bench", "rlexplain.xrlbench", "rlexplain.compare"), (mod, d)
    for name in ("Occlusion", "NoiseSensitivity", "SARFA", "RISE", "LIMESlic", "segment", "PAPER_PARAMS"):
        assert getattr(saliency, name) is getattr(A, name)
    for name in ("TabularSHAP", "TabularLIME", "PerturbationSaliency", "SARFA", "DeepSHAP",
                 "GradientSHAP", "IntegratedGradients", "AIM", "AUM", "PGI", "PGU", "RIS", "EXPLAINERS", "explain", "score"):
        assert getattr(xrlbench, name) is getattr(A, name)
    for name in ("insertion_curves", "cascading_randomization", "spearman_similarity", "ssim_similarity", "hog_similarity"):
        assert getattr(saliency_bench, name) is getattr(A, name)


@pytest.mark.parametrize("key", ["occlusion", "noise_sensitivity", "sarfa", "rise", "lime_slic", "integrated_gradients", "deep_shap"])
def test_values_do_not_depend_on_the_number_of_workers(cnn, key):
    """States side by side on 2 workers (3 states), chunks side by side (1 state) and everything in one thread give the
    same values: every state's perturbed inputs go through the network in the same chunks."""
    from rlexplain.compute import ComputeSettings
    pol, x = cnn
    bg = np.random.default_rng(1).random((4, 2, 16, 16)).astype(np.float32)
    kw = {**FAST[key], **({"background": bg} if key in ("integrated_gradients", "deep_shap") else {})}
    got, before = {}, pol.settings
    try:
        for workers in (1, 2):
            pol.apply_settings(ComputeSettings(1, workers, "contiguous", 7, "override"))   # batch 7: several chunks per state
            got[workers] = (explain(key, pol, x, **kw).values, explain(key, pol, x[:1], **kw).values)
    finally: pol.apply_settings(before)   # the fixture is shared by the module's tests
    np.testing.assert_array_equal(got[1][0], got[2][0])
    np.testing.assert_array_equal(got[1][1], got[2][1])
    np.testing.assert_allclose(got[2][0][:1], got[2][1], rtol=1e-5, atol=1e-6)   # alone or in a batch (forward batch sizes differ)


def test_sarfa_preset_works_on_tabular_states_and_keeps_one_fitted_explainer():
    "The Huber et al. preset's disk radius applies to images only; tabular states get XRL-Bench's SARFA, fitted once."
    from rlexplain.attribution import explainer
    pol = linear_policy([[1.0, 0.5, 0.0, 0.0], [-1.0, 0.0, 0.2, 0.0]])
    X = np.random.default_rng(0).normal(size=(10, 4)).astype(np.float32)
    ex = explainer("sarfa").preset("huber2022", background=X)
    a = explain(ex, pol, X[:3]).values
    assert a.shape == (3, 4) and np.isfinite(a).all()
    fits, fit = [], ex.fit
    ex.fit = lambda *a, **k: fits.append(1) or fit(*a, **k)
    explain(ex, pol, X[3:6])
    assert fits == []                                    # fitted once, to its background


def test_metrics_and_fitted_explainers_forward_at_the_policys_batch_size(cnn):
    """The insertion metric, XRL-Bench's fidelity metrics and fitted explainers send images through the network at the
    policy's calibrated batch size (they used fixed 1024 / 8192 / 128, bypassing the compute settings), and an explicit
    `batch_size` still overrides it."""
    from rlexplain.attribution import PGI, insertion_curves
    from rlexplain.compute import ComputeSettings
    pol, x = cnn
    sizes, before, forward = [], pol.settings, pol.forward
    def spy(z):
        sizes.append(len(z)); return forward(z)
    try:
        pol.apply_settings(ComputeSettings(1, 1, "contiguous", 5, "override"))
        pol.forward = spy
        maps = np.random.default_rng(0).random((3, 16, 16))
        insertion_curves(pol, x, maps, pixel_step=16)
        assert sizes and max(sizes) == 5, sizes
        sizes.clear(); insertion_curves(pol, x, maps, pixel_step=16, batch_size=9)
        assert max(sizes) == 9, sizes
        ex = _fitted("PS", pol, stride=4)
        assert ex.batch_size == 5
        att = ex.explain(pol, x)
        sizes.clear(); PGI(n_draws=3)(pol, x, att)    # 3 states x 3 draws: 9 images per k, more than the batch of 5
        assert sizes and max(sizes) == 5, sizes
        with pytest.raises(ValueError, match="batch_size"): insertion_curves(pol, x, maps, batch_size=0)
    finally:
        pol.forward = forward; pol.apply_settings(before)


def test_pgi_pgu_blur_is_xrlbench_codes_image_perturbation():
    """`image_perturbation="blur"` (XRL-Bench's code, utils/perturbation.py): the chosen pixel locations take the values of
    the image blurred by a sigma-5 Gaussian in every frame, locations black in every frame stay. With Q linear, PGI at
    k = all pixels is |Q_a(x) - Q_a(x')| for that x', computed here with scipy; PGU at k = all pixels is the same."""
    from rlexplain.attribution import AIM, PGI, PGU
    torch.manual_seed(0)
    C, H, W = 2, 8, 8
    net = nn.Sequential(nn.Flatten(), nn.Linear(C * H * W, 3))
    pol = Policy.from_module(net, (C, H, W), device="cpu")
    rng = np.random.default_rng(0)
    x = rng.random((4, C, H, W)).astype(np.float32)
    x[:, :, :2] = 0.0                      # two black rows: left alone
    x[:, 0, 5, 5] = 0.0                    # black in one frame only: blurred
    imp = rng.random(x.shape).astype(np.float32)
    blurred = scipy.ndimage.gaussian_filter(x.astype(np.float64), sigma=(0, 0, 5, 5), mode="reflect")
    xp = np.where((x == 0).all(1, keepdims=True), x, blurred)
    with torch.no_grad(): q, qp = net(torch.as_tensor(x)).numpy(), net(torch.as_tensor(xp, dtype=torch.float32)).numpy()
    a = q.argmax(1)
    att = Attribution(imp, a, "random")
    want = np.abs(q[np.arange(4), a] - qp[np.arange(4), a]).mean()
    for cls in (PGI, PGU):
        r = cls(ks=[H * W], image_perturbation="blur")(pol, x, att)
        np.testing.assert_allclose(r.value, want, rtol=1e-5)
        assert r.params["image_perturbation"] == "blur"
        assert cls(ks=[H * W], image_perturbation="blur", seed=7)(pol, x, att).value == r.value   # one deterministic change, no noise
    noise = PGI(ks=[H * W])(pol, x, att).value                      # the paper's Eq. 1 stays the default
    assert noise == PGI(ks=[H * W], image_perturbation="noise")(pol, x, att).value != PGI(ks=[H * W], image_perturbation="blur")(pol, x, att).value
    tab = linear_policy([[1.0, 0.5], [-1.0, 0.0]])
    xt = np.ones((2, 2), np.float32); at = Attribution(xt, [0, 0], "ones")
    with pytest.raises(ValueError, match="tabular"): PGI(image_perturbation="blur")(tab, xt, at)
    with pytest.raises(ValueError, match="AIM"): AIM(image_perturbation="blur")(pol, x, att)
    with pytest.raises(ValueError, match="image_perturbation"): PGU(image_perturbation="smudge")(pol, x, att)
    with pytest.raises(ValueError, match="blur_sigma"): PGI(image_perturbation="blur", blur_sigma=0)(pol, x, att)
    with pytest.raises(ValueError, match="pixel_step"): PGI(pixel_step=-3)(pol, x, att)


def test_penultimate_features_keep_the_states_order_with_two_workers(cnn):
    """HIGHLIGHTS' penultimate activations: with chunks side by side on 2 workers (batch 2, 9 states) each row still belongs to
    its own state (a shared hook list appended chunks in the order the threads finished)."""
    from rlexplain.compute import ComputeSettings
    from rlexplain.saliency_bench import penultimate_features
    pol, _ = cnn
    x = np.random.default_rng(3).random((9, 2, 16, 16)).astype(np.float32)
    with torch.no_grad(): want = torch.relu(pol.module[0](torch.as_tensor(x))).flatten(1).numpy()   # input of the last Linear
    before = pol.settings
    try:
        pol.apply_settings(ComputeSettings(1, 2, "contiguous", 2, "override"))
        for _ in range(5): np.testing.assert_allclose(penultimate_features(pol, x), want, rtol=1e-5, atol=1e-6)
    finally: pol.apply_settings(before)


def test_sarfa_blob_keeps_its_blob_parameters(cnn):
    "perturbation='blob' is XRL-Bench's SARFA: its blob width and blur reach the fitted explainer (disk-only parameters do not)."
    from rlexplain.attribution import explainer
    pol, x = cnn
    ex = explainer("sarfa", perturbation="blob", mask_sigma=2.0, blur_sigma=1.5, radius=3, background=x)
    explain(ex, pol, x)
    p = ex.fitted_params()
    assert p.get("mask_sigma") == 2.0 and p.get("blur_sigma") == 1.5 and "radius" not in p


# ---------------------------------------------------------------- the three bugs of issue 26 (each fails on the old code)
def test_noise_metrics_refuse_a_missing_noise_scale():
    "PGI, PGU and RIS add noise in units of each feature's std: one state has std 0, so they must ask for feature_std, not return 0."
    pol = linear_policy([[1.0, 2.0, 0.0], [0.0, 0.0, 1.0]])
    X = np.array([[1.0, 1.0, 1.0]], np.float32)
    att = explain("integrated_gradients", pol, X, baseline="zeros")
    for m in ("PGI", "PGU", "RIS"):
        with pytest.raises(ValueError, match="feature_std"): score(m, pol, X, att)
        with pytest.raises(ValueError, match="feature_std"): score(m, pol, X, att, feature_std=np.zeros(3))
    r = score("PGI", pol, X, att, feature_std=np.ones(3))                       # the dataset's scale: a real gap
    assert r.value > 0
    bg = np.random.default_rng(0).normal(size=(50, 3)).astype(np.float32)
    np.testing.assert_allclose(score("PGI", pol, X, att, background=bg).per_state,
                               score("PGI", pol, X, att, feature_std=bg.std(0)).per_state)


def test_every_option_reaches_the_explainer():
    "explain's own arguments are positional-only: Integrated Gradients' `method` option is the explainer's, not explain's."
    pol = linear_policy([[1.0, -2.0, 0.5]])
    X = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    att = explain("integrated_gradients", pol, X, method="gausslegendre", baseline="zeros", n_steps=7)
    assert att.method == "integrated_gradients" and att.params["method"] == "gausslegendre" and att.params["n_steps"] == 7
    np.testing.assert_allclose(att.values, X * np.array([1.0, -2.0, 0.5]), rtol=1e-4, atol=1e-5)   # linear: IG is exact


def test_gradient_shap_of_a_state_ignores_the_other_states(cnn):
    "At a fixed seed a state's GradientSHAP values are the same alone and in a batch whose states share its action."
    pol, x = cnn
    bg = np.random.default_rng(5).random((8, 2, 16, 16)).astype(np.float32)
    batch = explain("gradient_shap", pol, x, actions=0, background=bg, n_background=4, n_samples=10)
    for i in range(len(x)):
        alone = explain("gradient_shap", pol, x[i:i + 1], actions=0, background=bg, n_background=4, n_samples=10)
        np.testing.assert_allclose(alone.values[0], batch.values[i], rtol=1e-5, atol=1e-7)
    other = explain("gradient_shap", pol, x, actions=0, background=bg, n_background=4, n_samples=10, seed=1)
    assert not np.allclose(other.values, batch.values)                          # the seed still matters


# ---------------------------------------------------------------- one road (issue 26)
def test_lesson_40_table_is_score_with_the_background_std():
    "run_benchmark's cells are score() of explain()'s attribution with feature_std = background.std(0): one road, one answer."
    pol = linear_policy([[1, 0.5, 0, 0], [-1, 0, 0.2, 0]])
    rng = np.random.default_rng(0)
    B = rng.normal(size=(300, 4)).astype(np.float32) * np.array([1, 2, 0.5, 1], np.float32)
    X = rng.normal(size=(12, 4)).astype(np.float32)
    rb = xrlbench.run_benchmark(pol, B, X, methods=("IG", "PS"), n_ris=4, ris_neighbors=2)
    for name, key in (("IG", "integrated_gradients"), ("PS", "ps")):
        att = explain(key, pol, X, background=B)
        row = rb.table.set_index("method").loc[name]
        for m in ("AIM", "AUM", "PGI", "PGU"):   # each ranking alone, and the paper's value: the better of the two (Sec. 4.2)
            ab, rw = (score(m, pol, X, att, feature_std=B.std(0), order=o).value for o in ("abs", "raw"))
            assert (ab, rw) == pytest.approx((row[f"{m}_abs"], row[f"{m}_raw"]), rel=1e-12, abs=1e-12), (name, m)
            assert row[m] == xrlbench.better_of_two(m, row[f"{m}_abs"], row[f"{m}_raw"])[0], (name, m)
        ris = score("RIS", pol, X[:4], att[:4], n_neighbors=2, feature_std=B.std(0), also=("code",))
        assert (ris.value, ris.params["also"]["code"]) == pytest.approx((row["RIS"], row["RIS_code"]), rel=1e-9)
        # the old default (the std of the 12 explained states) is another noise scale, and another PGI
        assert score("PGI", pol, X, att).value != pytest.approx(row["PGI"], rel=1e-6)


def test_benchmarks_use_only_explain_and_score():
    import inspect
    from rlexplain import compare
    for fn in (xrlbench.run_benchmark, compare.compare):
        src = inspect.getsource(fn)
        assert "explain(" in src and "score(" in src, fn.__name__
        for old in ("make_explainer", "FIDELITY_METRICS[m](", "RIS(", "explainer("):
            assert old not in src, (fn.__name__, old)


def test_one_alias_map(cnn):
    """'lime' means one thing: LIME on SLIC superpixels, an image method (the one alias map, `registry_name`'s), in explain
    and the LIME explainers alike; LIME on tabular states is 'tabular_lime' (XRL-Bench's 'TabularLIME'), never 'lime'."""
    from rlexplain.attribution import registry_name
    assert registry_name("lime") == "lime_slic" and registry_name("baseline") == "random"
    assert registry_name("IG") == "integrated_gradients" and registry_name("PS") == "perturbation_saliency"
    assert registry_name("TabularLIME") == registry_name("tabular_lime") == "tabular_lime"
    pol, x = cnn
    kw = dict(n_samples=30, n_segments=10)
    np.testing.assert_array_equal(explain("lime", pol, x, **kw).pixels(), explain("lime_slic", pol, x, **kw).pixels())
    from rlexplain.attribution.explainers.lime import _lime
    np.testing.assert_array_equal(explain("lime", pol, x, **kw).pixels(), _lime(pol, x, **kw).pixels())   # the function's default: slic
    assert explain("lime", pol, x[:1], **kw).method == "lime_slic"
    tab = linear_policy(np.eye(2, 3))
    B = np.random.default_rng(0).normal(size=(50, 3)).astype(np.float32)
    with pytest.raises(ValueError, match="tabular_lime"): explain("lime", tab, B[:2])        # names the tabular method
    assert not hasattr(EXPLAINERS["lime_slic"], "fit")                                       # image LIME fits nothing
    assert type(_fitted("integrated_gradients", tab, B)).__name__ == "IntegratedGradients"


def test_the_fitted_machinery_gives_the_attribution_of_explain():
    "Each XRL-Bench name's explainer, fitted (`fit`) then explaining, gives the Attribution `explain` gives under the registry's name, value for value."
    from rlexplain.attribution.explainers.fitted import _FittedExplainer
    pol = linear_policy([[1, 0.5, 0], [-1, 0, 0.3]])
    B = np.random.default_rng(2).normal(size=(120, 3)).astype(np.float32); X = B[:6]
    cases = {"TabularSHAP": ("tabular_shap", {}), "TabularLIME": ("tabular_lime", dict(n_samples=200)), "PS": ("perturbation_saliency", {}),
             "SARFA": ("sarfa", {}), "DeepSHAP": ("deep_shap", dict(n_background=20)), "GradientSHAP": ("gradient_shap", dict(n_background=20, n_samples=20)),
             "IG": ("integrated_gradients", dict(n_background=5))}
    for old, (new, kw) in cases.items():
        ex = _fitted(old, pol, B, **kw)
        assert isinstance(ex, _FittedExplainer)
        e = ex.explain(pol, X)
        att = explain(new, pol, X, background=B, **kw)
        assert type(e) is Attribution
        np.testing.assert_array_equal(e.values, att.values); np.testing.assert_array_equal(e.actions, att.actions)


def test_every_action_kept_for_to_shap():
    "all_actions=True keeps every action's values: to_shap(action=b) is the attribution explain gives for action b."
    pol = linear_policy([[1.0, -2.0, 0.5], [0.0, 1.0, 0.0]])
    B = np.random.default_rng(0).normal(size=(30, 3)).astype(np.float32)
    e = _fitted("IG", pol, B, n_background=5, all_actions=True).explain(pol, B[:4])
    for b in range(2):
        np.testing.assert_allclose(e.to_shap(action=b).values, explain("integrated_gradients", pol, B[:4], b, background=B, n_background=5).values, atol=1e-6)
    np.testing.assert_allclose(e[1:3].to_shap(action=1).values, e.to_shap(action=1).values[1:3])
    with pytest.raises(ValueError, match="actions=1"): explain("integrated_gradients", pol, B[:4], background=B, n_background=5).to_shap(action=1)


def test_results_plot_on_axes_and_summarise_as_frames():
    """Every result type: `summary` is a method (never a field) returning a DataFrame, and `plot(ax=None)` draws on the Axes it is
    given and returns it; multi-panel `plot_*` methods return the Figure."""
    import dataclasses, importlib, inspect, pkgutil
    import matplotlib.axes, matplotlib.figure, matplotlib.pyplot as plt
    import pandas as pd
    import rlexplain
    from rlexplain.runs import Result
    for m in pkgutil.walk_packages(rlexplain.__path__, "rlexplain."):
        if m.name.split(".")[-1] not in ("cli", "lessons"): importlib.import_module(m.name)
    def subclasses(c): return set(c.__subclasses__()).union(*(subclasses(s) for s in c.__subclasses__()))
    for cls in subclasses(Result):
        fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
        assert "summary" not in fields, f"{cls.__name__}.summary is a field; summary() must be a method returning a DataFrame"
        if hasattr(cls, "summary"):
            assert inspect.isfunction(cls.summary), cls.__name__
            assert "DataFrame" in str(inspect.signature(cls.summary).return_annotation), f"{cls.__name__}.summary() must return a DataFrame"
    pol = linear_policy([[1.0, -2.0, 0.5], [0.0, 1.0, 0.0]])
    X = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    att = explain("integrated_gradients", pol, X, background=X, n_background=3)
    r = score("AIM", pol, X, att)
    fid = xrlbench.AIM(order="both")(pol, X, att)           # both rankings: the signed one's curve in raw
    assert fid.value == r.value and fid.raw["raw_curve"].shape == fid.curve.shape
    for res in (att, r, fid):
        assert isinstance(res.summary(), pd.DataFrame)
        fig, ax = plt.subplots(); assert res.plot(ax=ax) is ax; plt.close(fig)
        assert isinstance(res.plot(), matplotlib.axes.Axes); plt.close("all")


def test_results_read_in_a_few_lines(cnn):
    pol, x = cnn
    big = np.random.default_rng(0).random((40, 2, 16, 16)).astype(np.float32)
    att = explain("occlusion", pol, big, patch=4)
    assert len(repr(att).splitlines()) <= 6 and "occlusion" in repr(att) and len(repr(att)) < 800
    assert att.source.startswith("Zeiler") and att.timing["total_s"] >= 0 and att.seconds == att.timing["total_s"]
    r = score("AIM", pol, big, att)
    assert len(repr(r).splitlines()) <= 6 and len(repr(r)) < 800
    assert list(r.summary().columns) == ["metric", "method", "value", "higher_is_better", "n_states"]
    s = att.summary(); assert len(s) == 40 and {"state", "action", "mean_abs"} <= set(s.columns)
    sub = att[[3, 5]]
    np.testing.assert_array_equal(sub.values, att.values[[3, 5]]); np.testing.assert_array_equal(sub.actions, att.actions[[3, 5]])
    ax = att.plot(); import matplotlib.axes; assert isinstance(ax, matplotlib.axes.Axes)


def test_to_shap_of_a_tabular_attribution():
    pol = linear_policy([[1.0, -2.0, 0.5], [0.0, 1.0, 0.0]])
    B = np.random.default_rng(0).normal(size=(30, 3)).astype(np.float32)
    att = explain("deep_shap", pol, B[:5], background=B)
    sx = att.to_shap()
    np.testing.assert_allclose(sx.values, att.values, rtol=1e-6)
    # DeepSHAP is additive: base value + sum of values = the explained output
    np.testing.assert_allclose(sx.base_values + sx.values.sum(1), pol.outputs(B[:5]).numpy()[np.arange(5), att.actions], rtol=1e-4, atol=1e-5)


def test_pixel_maps_survive_the_contract_bit_for_bit():
    "Three frames: m/3 summed three times is not m in float32; pixels() returns the method's own map, and saliency_bench's route is explain."
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 7 * 7, 3))
    pol = Policy.from_module(net, (3, 16, 16), device="cpu")
    x = np.random.default_rng(1).random((4, 3, 16, 16)).astype(np.float32)
    m = NoiseSensitivity(radius=3).explain(pol, x)
    att = explain("noise_sensitivity", pol, x, radius=3)
    np.testing.assert_array_equal(att.pixels(), m.pixels())
    np.testing.assert_array_equal(att[1:3].pixels(), m.pixels()[1:3])
    from rlexplain.attribution import paper_explainer
    np.testing.assert_array_equal(paper_explainer("noise_sensitivity", radius=3).explain(pol, x).pixels(), m.pixels())
    np.testing.assert_array_equal(paper_explainer("random").explain(pol, x).pixels(), saliency_bench.random_saliency(pol, x).pixels())


def test_the_fields_parameter_names_are_accepted(cnn):
    """captum's names (`baselines`, `actions`) reach each method as its paper's own (LIME's `hide_color`, occlusion's `color`): the
    same values bit for bit, the paper's name kept in params; both names raise. The sample count is `n_samples` for every method."""
    pol, x = cnn
    pairs = [("occlusion", dict(patch=4, baselines=0.5), dict(patch=4, color=0.5)),
             ("lime_slic", dict(n_samples=30, n_segments=10, baselines=0.25), dict(n_samples=30, n_segments=10, hide_color=0.25))]
    for key, field, paper in pairs:
        a, b = explain(key, pol, x, actions=[0, 1, 2], **field), explain(key, pol, x, actions=[0, 1, 2], **paper)
        np.testing.assert_array_equal(a.values, b.values)
        assert all(a.params[k] == paper[k] for k in set(paper) - set(field)), (key, a.params)          # the paper's names are kept
        assert not (set(field) - set(paper)) & set(a.params), (key, a.params)
    assert explain("occlusion", pol, x, patch=4, baselines=0.5).values.tolist() != explain("occlusion", pol, x, patch=4).values.tolist()
    with pytest.raises(ValueError, match="name the same parameter"): explain("lime_slic", pol, x, baselines=0.1, hide_color=0.2)
    W = np.array([[1.0, -2.0, 0.5], [0.0, 1.0, 1.0]], np.float32)
    lin = linear_policy(W)
    s = np.random.default_rng(0).normal(size=(20, 3)).astype(np.float32)
    t1 = explain("tabular_lime", lin, s[:2], background=s, n_samples=200, seed=0)
    assert t1.params["n_samples"] == 200 and explain("gradient_shap", pol, x, background=x, n_background=3, n_samples=10).params["n_samples"] == 10
    from rlexplain.attribution import insertion_curves
    m = np.random.default_rng(1).random((3, 16, 16))
    np.testing.assert_array_equal(insertion_curves(pol, x, m, actions=[2, 1, 0]).q, insertion_curves(pol, x, m, [2, 1, 0]).q)
    with pytest.raises(TypeError, match="action"): insertion_curves(pol, x, m, action=0)      # one name: `actions`
