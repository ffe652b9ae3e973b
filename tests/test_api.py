"""The public API has one name per concept (issue 39): every name in a module's `__all__` (and in `rlexplain.attribution`)
is the object its defining module defines, never an alias object, and the deleted compatibility names stay deleted."""
import importlib
import inspect
import pkgutil

import pytest

import rlexplain

# Every module of the package (the zoo's folders hold agents, _modidx is nbdev's index).
MODULES = sorted(m.name for m in pkgutil.walk_packages(rlexplain.__path__, "rlexplain.")
                 if not m.name.startswith("rlexplain.zoo") and m.name != "rlexplain._modidx")
PACKAGES = ("rlexplain.attribution", "rlexplain.attribution.explainers", "rlexplain.attribution.metrics")   # they gather their submodules' names

# The compatibility layer deleted in issue 39: module -> names that must raise AttributeError.
_FITTED_OLD = ("TabularSHAP", "TabularLIME", "PerturbationSaliency", "SARFA", "DeepSHAP", "GradientSHAP", "IntegratedGradients")
_EXPLAINERS_OLD = ("SARFAExplainer", "PerturbationSaliencyExplainer", "TabularSHAPExplainer", "TabularLIMEExplainer", "DeepSHAPExplainer",
                   "GradientSHAPExplainer", "IntegratedGradientsExplainer", "RISEExplainer", "LIMEImage")   # issue 39: one class per method
_FUNCS_OLD = ("occlusion", "noise_sensitivity", "sarfa", "sarfa_score", "rise", "rise_masks", "lime")          # now private, or SARFA.score
_METRICS_OLD = ("FIDELITY_METRICS", "FidelityMetric", "FidelityResult", "AIMMetric", "AUMMetric", "PGIMetric", "PGUMetric")
DELETED = {
    "rlexplain.attribution": ("SaliencyMap", "Explanation", "FittedExplainer", "make_explainer", "paper_saliency", "deprecated_alias",
                              "FITTED_EXPLAINERS", "SALIENCY_METHODS", *_METRICS_OLD, "RISMetric", "RISResult",
                              "INSERTION_METRIC_CLASSES", *_EXPLAINERS_OLD, *_FUNCS_OLD, "EXPLAINER_ALIASES"),
    "rlexplain.attribution._base": ("SaliencyMap", "deprecated_alias", "_DeprecatedName", "EXPLAINER_ALIASES"),
    "rlexplain.attribution.explainers": (*_EXPLAINERS_OLD, "sarfa_score", "rise_masks"),  # .occlusion, .noise_sensitivity, .rise, .lime, .sarfa: its modules
    "rlexplain.attribution.explainers.occlusion": ("occlusion",),
    "rlexplain.attribution.explainers.noise_sensitivity": ("noise_sensitivity",),
    "rlexplain.attribution.explainers.rise": ("rise", "rise_masks"),
    "rlexplain.attribution.explainers.lime": ("lime",),
    "rlexplain.attribution.explainers.presets": ("paper_saliency", "SALIENCY_METHODS"),
    # issue 49: one class per method, with its own computation; the second (fitted) contract is gone
    "rlexplain.attribution.explainers.fitted": ("Explanation", "FittedExplainer", "_PerturbationSaliency", "_SARFA", "_explanation"),
    "rlexplain.attribution.explainers.gradient": ("DeepSHAP", "GradientSHAP", "IntegratedGradients", "_DeepSHAP", "_GradientSHAP", "_IntegratedGradients"),
    "rlexplain.saliency": ("SaliencyMap", "paper_saliency", "SALIENCY_METHODS", *_FUNCS_OLD),
    "rlexplain.saliency_bench": ("explain", "make_explainer", "BENCH_METHODS", "bench_maps"),   # issue 49: the classes' own API
    "rlexplain.xrlbench": ("make_explainer", "Explanation", "FittedExplainer", "FITTED_EXPLAINERS", "ATTRIBUTION_EXPLAINERS",
                           *_METRICS_OLD, *_EXPLAINERS_OLD, "sarfa_score"),
    # issue 39 item 1: one Metric class per metric, registered in METRICS
    "rlexplain.attribution.metrics.fidelity": _METRICS_OLD,
    "rlexplain.attribution.metrics.robustness": ("RISMetric", "RISResult"),
    "rlexplain.attribution.metrics.insertion": ("INSERTION_METRIC_CLASSES",),
}


def _public(modname: str) -> list:
    "(name, object) for every name in the module's `__all__`."
    mod = importlib.import_module(modname)
    names = set(getattr(mod, "__all__", ()))
    return [(n, getattr(mod, n)) for n in sorted(names)]


@pytest.mark.parametrize("modname", MODULES)
def test_all_names_exist_and_live_in_their_defining_module(modname):
    """Each class or function in `__all__` has the module as its `__module__` (a package: one of its submodules, whose own object
    it is), carries its own name (no alias under another name), and is not a metaclass-made stand-in for another class."""
    mod = importlib.import_module(modname)
    missing = [n for n in getattr(mod, "__all__", ()) if not hasattr(mod, n)]
    assert not missing, f"{modname}.__all__ names {missing}, which the module does not define"
    bad = []
    for name, obj in _public(modname):
        if not (inspect.isclass(obj) or inspect.isfunction(obj)): continue
        home = obj.__module__
        if modname in PACKAGES:
            ok = home.startswith(modname + ".") and getattr(importlib.import_module(home), name, None) is obj
        else:
            ok = home == modname
        if not ok: bad.append(f"{name} (defined in {home})")
        elif obj.__name__ != name: bad.append(f"{name} (is {obj.__name__})")
        elif inspect.isclass(obj) and type(obj).__module__.startswith("rlexplain"):
            bad.append(f"{name} (made by the metaclass {type(obj).__qualname__})")
    assert not bad, f"{modname}: names that are not the object their module defines: {bad}"


def test_attribution_package_names_are_the_defining_modules_objects():
    "Every name of `rlexplain.attribution.__all__` is the object of the one submodule that lists it: star-import order changes nothing."
    import rlexplain.attribution as A
    owners = {}
    for sub in [m for m in MODULES if m.startswith("rlexplain.attribution.") and m not in PACKAGES]:
        for n in getattr(importlib.import_module(sub), "__all__", ()): owners.setdefault(n, []).append(sub)
    twice = {n: s for n, s in owners.items() if len(s) > 1}
    assert not twice, f"names listed by more than one module: {twice}"
    for n in A.__all__:
        assert n in owners, f"rlexplain.attribution.{n} is listed by no submodule"
        assert getattr(A, n) is getattr(importlib.import_module(owners[n][0]), n), f"rlexplain.attribution.{n} is not {owners[n][0]}.{n}"


@pytest.mark.parametrize("modname", sorted(DELETED))
def test_deleted_names_stay_deleted(modname):
    mod = importlib.import_module(modname)
    for name in DELETED[modname]:
        with pytest.raises(AttributeError):
            getattr(mod, name)


def test_no_deprecated_objects_or_attributes_remain():
    """No public object of any module is a deprecated stand-in (a docstring that starts 'Deprecated'); `Attribution.importance`
    is gone (`values` is the one name); `xrlbench.EXPLAINERS`, where present, is the explainer registry itself."""
    from rlexplain.attribution import EXPLAINERS, Attribution
    found = []
    for modname in MODULES:
        mod = importlib.import_module(modname)
        for name, obj in vars(mod).items():
            if name.startswith("_") or not callable(obj) or not str(getattr(obj, "__module__", "")).startswith("rlexplain"): continue
            if (getattr(obj, "__doc__", None) or "").lstrip().startswith("Deprecated"): found.append(f"{modname}.{name}")
    assert not found, f"deprecated names remain: {found}"
    assert not hasattr(Attribution, "importance")
    from rlexplain import xrlbench
    assert getattr(xrlbench, "EXPLAINERS", EXPLAINERS) is EXPLAINERS


def test_score_resolves_metric_names_as_explain_resolves_explainer_names():
    "Issue 49 item 4: one resolver (`resolve_name`): case, '_' and '-' ignored, aliases, and a did-you-mean error listing the names."
    import numpy as np
    from torch import nn
    from rlexplain.attribution import EXPLAINERS, METRICS, explain, resolve_name, score
    from rlexplain.core import Policy
    pol = Policy.from_module(nn.Linear(3, 2, bias=False), (3,), device="cpu")
    x = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    att = explain("Integrated-Gradients", pol, x, background=x, n_background=3, n_steps=4)
    assert att.method == "integrated_gradients" and explain("IG", pol, x, background=x, n_background=3, n_steps=4).method == att.method
    for name in ("aim", "AIM", "Aim"):
        assert resolve_name(name, METRICS, None, "metric") == "AIM"
        assert score(name, pol, x, att).value == score("AIM", pol, x, att).value
    assert resolve_name("insertion_black_q", METRICS, None, "metric") in METRICS
    for bad, reg, kind in (("aimm", METRICS, "metric"), ("integrated_gradient_", EXPLAINERS, "explainer")):
        with pytest.raises(LookupError, match=rf"unknown {kind} '{bad}' \(did you mean .*\?\); known: "):
            resolve_name(bad, reg, None, kind)
    with pytest.raises(LookupError, match=r"unknown metric 'aimm' \(did you mean 'AIM'.*; known: AIM, AUM"): score("aimm", pol, x, att)
    with pytest.raises(LookupError, match=r"unknown explainer 'occlusio' \(did you mean 'occlusion'"): explain("occlusio", pol, x)
    with pytest.raises(LookupError, match="known: AIM"): score("no_such_metric", pol, x, att)


@pytest.mark.parametrize("modname", ["rlexplain.attribution.explainers.perturbation", "rlexplain.attribution.explainers.maps",
                                     "rlexplain.attribution.explainers.perturbation_saliency"])
def test_split_modules_stay_deleted(modname):
    "Issue 49 item 4: one class per file; the family modules that held several methods are gone (their code lives in the methods' files)."
    with pytest.raises(ModuleNotFoundError): importlib.import_module(modname)
