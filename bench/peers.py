"""rlexplain against captum, shap, lime and Quantus, side by side, on the same network and the same states, for every
method they share. Printed (never asserted) with the machine, its load before and after, torch's threads and the versions.

Agents: the zoo's ALE Breakout DQN (Nature CNN, 4 x 84 x 84 states) for the image methods, the zoo's LunarLander DQN
(an 8-feature MLP) for tabular IG. States come from one seeded rollout of each agent; the reference (background) states
are 100 other states of that rollout. Every timed call includes the method's setup (explainer construction, the
references' forward), as a user's single call would.

| row                 | rlexplain (public API, see `rx_*`)             | peers                                                   |
|---------------------|------------------------------------------------|---------------------------------------------------------|
| occlusion           | "occlusion", patch 2, black (Huber et al.)     | captum Occlusion, window (C, 2, 2), stride 2, baseline 0 |
| lime_slic           | "lime_slic" (2000 samples, SLIC 200/10/0.25)   | lime's LimeImageExplainer, same SLIC and samples        |
| tabular_ig          | "integrated_gradients", 100 refs, 50 steps     | captum IntegratedGradients on (state, ref) pairs, mean  |
| ig_image            | "integrated_gradients", zero baseline, 50 steps| captum IntegratedGradients, zero baseline               |
| ig_image_100        | "integrated_gradients", 100 refs, 50 steps     | captum IntegratedGradients on (state, ref) pairs, mean  |
| gradient_shap       | "gradient_shap", 100 refs, 200 samples         | shap GradientExplainer (ranked_outputs=1); captum GradientShap (stdevs 0) |
| deep_shap           | "deep_shap", 100 refs                          | shap DeepExplainer (ranked_outputs=1); captum DeepLiftShap |
| ris                 | score("RIS", 10 neighbours) of rlexplain's IG  | Quantus RelativeInputStability (10 samples) of captum IG |
| ris_same_explainer  | RIS of one shared explain function             | Quantus RIS of that same function: the metric's own cost |

Threads: rlexplain runs at its own policy (one torch thread, chunks on `workers` Python threads, `compute.torch_threads`); each
peer runs at every torch thread count of `--peer-threads` (default 1 and torch's default, the cores: what a user of the peer
gets), as separate conditions, and the ratio of a row is also given against the peer's fastest setting (`best`).
Conditions run in interleaved rounds (the order rotated each round); medians are reported with the ratio
peer / rlexplain (> 1: rlexplain is faster). `max|d|/max|v|` compares the last round's values where the two libraries
compute the same quantity (IG; DeepLIFT-SHAP; occlusion up to its score sign and upsampling is not compared).
Quantus 0.6 is not a dependency of rlexplain: `pip install --no-deps --target DIR quantus==0.6.0 cachetools` and pass
`--peer-path DIR` (rows of a missing peer are skipped and say so).

    python bench/peers.py [--states 4] [--rounds 5] [--busy] [--threads N] [--peer-threads 1,2] [--methods occlusion,deep_shap] [--peer-path DIR]
"""
import argparse
import copy
import importlib
import importlib.metadata
import os
import statistics
import sys
import time
import warnings

os.environ.setdefault("TQDM_DISABLE", "1")   # lime 0.2 draws a progress bar per explained image

import numpy as np
import torch

from _common import TORCH_DEFAULT, busy, machine, rotated


# ---------------------------------------------------------------------------------------------------------------------
# rlexplain's public API through one adapter: the attribution refactor may rename explainer/explain/score/Attribution;
# each name is looked up in the new places first, then the old ones, so a rename is a one-line change here.
def _find(*candidates):
    "The first `module:attr` of `candidates` that imports, else None."
    for c in candidates:
        mod, attr = c.split(":")
        try: return getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError): continue
    return None

RX_EXPLAIN = _find("rlexplain.attribution:explain", "rlexplain:explain")          # explain(method, policy, states, actions, **params)
RX_EXPLAINER = _find("rlexplain.attribution:explainer", "rlexplain:explainer")    # explainer(method, **params).explain(policy, states, actions)
RX_SCORE = _find("rlexplain.attribution:score", "rlexplain.metrics:score", "rlexplain:score")
RX_ATTRIBUTION = _find("rlexplain.attribution:Attribution")


def _values(att) -> np.ndarray:
    "An attribution's values `(N, *obs_shape)`."
    return np.asarray(att.values)


def rx_attribution(method: str, policy, states, actions, **params):
    "rlexplain's attribution object for `method` on `states`."
    if RX_EXPLAIN is not None: return RX_EXPLAIN(method, policy, states, actions, **params)
    return RX_EXPLAINER(method, **params).explain(policy, states, actions)


def rx_explain(method: str, policy, states, actions, **params) -> np.ndarray:
    "rlexplain's values `(N, *obs_shape)` float32 for `method` on `states`."
    return _values(rx_attribution(method, policy, states, actions, **params))


def rx_ris(policy, states, attribution, n_neighbors: int) -> float:
    "rlexplain's RIS ('paper' variant, Xiong et al. 2024 Eq. 3) of the explainer that made `attribution`, re-explaining the neighbours."
    r = RX_SCORE("RIS", policy, states, attribution, n_neighbors=n_neighbors)
    return float(getattr(r, "value", r))


def rx_ris_callable(policy, f, states, values, actions, n_neighbors: int) -> float:
    "rlexplain's RIS of an explain function `f(states, actions) -> values` (score's `explainer=f`)."
    att = RX_ATTRIBUTION(np.asarray(values), np.asarray(actions), "f")
    return float(RX_SCORE("RIS", policy, states, att, n_neighbors=n_neighbors, explainer=f).value)
# ---------------------------------------------------------------------------------------------------------------------


def rollout_states(policy, card, n_states: int, n_background: int, seed: int):
    "(states (n_states, *obs), background (n_background, *obs)) float32 from one seeded rollout, disjoint."
    from rlexplain.envs import collect_rollout, make_env
    env = make_env(card["env_id"], **card.get("env_kwargs", {}))
    need = n_states + n_background + 20
    obs = []
    ep = 0
    while sum(len(o) for o in obs) < need:
        ro = collect_rollout(env, policy, n_episodes=1, seed=seed + ep, max_steps=1000, epsilon=0.05)
        obs.append(np.asarray(ro.obs)); ep += 1
    obs = np.concatenate(obs)[20:]
    x = policy.obs(obs).cpu().numpy().astype(np.float32)
    idx = np.linspace(0, len(x) - 1, n_states + n_background).astype(int)
    pick = np.zeros(len(idx), bool); pick[np.linspace(0, len(idx) - 1, n_states).astype(int)] = True
    return x[idx[pick]], x[idx[~pick]]


def greedy(policy, x: np.ndarray) -> np.ndarray:
    with torch.no_grad(): return policy.module(torch.as_tensor(x)).argmax(-1).numpy()


# ------------------------------------------------ peers -------------------------------------------------------------
def captum_ig(module, x, a, refs=None, n_steps=50, batch=512):
    "captum IG, zero baseline (refs None) or averaged over `refs` (every state against every reference, as XRL-Bench)."
    from captum.attr import IntegratedGradients
    ig = IntegratedGradients(module)
    x = torch.as_tensor(x); t = torch.as_tensor(a)
    if refs is None:
        return ig.attribute(x, baselines=0.0, target=t, n_steps=n_steps, method="riemann_left",
                            internal_batch_size=max(len(x), batch)).detach().numpy()
    M = len(refs); r = torch.as_tensor(refs)
    out = []
    per = max(1, batch // M)     # states per call: captum needs internal_batch_size >= its rows
    for s in range(0, len(x), per):
        xc = x[s:s + per]
        xr, br = xc.repeat_interleave(M, 0), r.repeat(len(xc), *[1] * (r.ndim - 1))
        att = ig.attribute(xr, baselines=br, target=t[s:s + per].repeat_interleave(M), n_steps=n_steps,
                           method="riemann_left", internal_batch_size=max(len(xr), batch))
        out.append(att.detach().reshape(len(xc), M, *x.shape[1:]).mean(1).numpy())
    return np.concatenate(out)


def captum_occlusion(module, x, a, batch):
    from captum.attr import Occlusion
    C = x.shape[1]
    return Occlusion(module).attribute(torch.as_tensor(x), sliding_window_shapes=(C, 2, 2), strides=(C, 2, 2), baselines=0.0,
                                       target=torch.as_tensor(a), perturbations_per_eval=max(1, batch // len(x))).detach().numpy()


def lime_slic(module, x, a, batch, seg_params, num_samples=2000):
    from lime import lime_image
    from skimage.segmentation import slic
    def classify(imgs):   # (b, H, W, C) float64 -> (b, A)
        with torch.no_grad(): return module(torch.as_tensor(np.ascontiguousarray(imgs.transpose(0, 3, 1, 2)), dtype=torch.float32)).double().numpy()
    seg = lambda img: slic(img, channel_axis=-1, **seg_params)
    out = []
    for i in range(len(x)):
        ex = lime_image.LimeImageExplainer(kernel_width=0.25, feature_selection="none", random_state=0)
        e = ex.explain_instance(np.moveaxis(x[i], 0, -1).astype(np.float64), classify, labels=(int(a[i]),), top_labels=None,
                                hide_color=0, num_features=100_000, num_samples=num_samples, batch_size=batch,
                                segmentation_fn=seg, random_seed=0)
        w = np.zeros(int(e.segments.max()) + 1)
        for f, v in e.local_exp[int(a[i])]: w[f] = v
        out.append(w[e.segments])
    return np.stack(out)


def shap_gradient(module_copy, x, a, refs, nsamples=200, batch=200):
    import shap
    e = shap.GradientExplainer(module_copy, torch.as_tensor(refs), batch_size=batch)
    sv, _ = e.shap_values(torch.as_tensor(x), nsamples=nsamples, ranked_outputs=1, rseed=0)
    return np.asarray(sv)[..., 0] if np.asarray(sv).ndim == x.ndim + 1 else np.asarray(sv[0])


def captum_gradient_shap(module, x, a, refs, nsamples=200):
    from captum.attr import GradientShap
    torch.manual_seed(0)
    return GradientShap(module).attribute(torch.as_tensor(x), baselines=torch.as_tensor(refs), n_samples=nsamples, stdevs=0.0,
                                          target=torch.as_tensor(a)).detach().numpy()


def shap_deep(module_copy, x, a, refs):
    import shap
    e = shap.DeepExplainer(module_copy, torch.as_tensor(refs))
    # shap 0.51's additivity check is wrong with ranked_outputs (it fails on values equal to rlexplain's, which pass it
    # per action): off here, so the peer does one forward pass less than rlexplain, which checks
    sv, _ = e.shap_values(torch.as_tensor(x), ranked_outputs=1, check_additivity=False)
    sv = np.asarray(sv)
    return sv[..., 0] if sv.ndim == x.ndim + 1 else sv[0]


def captum_deeplift_shap(module, x, a, refs):
    from captum.attr import DeepLiftShap
    return DeepLiftShap(module).attribute(torch.as_tensor(x), baselines=torch.as_tensor(refs), target=torch.as_tensor(a)).detach().numpy()


def quantus_ris(module, x, a, values, explain_np, n_neighbors, noise_std):
    import quantus
    # Quantus' own neighbourhood (batch_uniform_noise); rlexplain's is Gaussian, 0.05 std per feature: the same count of
    # neighbours and re-explanations, which is the cost; `noise_std` is unused
    m = quantus.RelativeInputStability(nr_samples=n_neighbors, return_nan_when_prediction_changes=False,
                                       disable_warnings=True, display_progressbar=False)
    return float(np.nanmean(m(model=module, x_batch=x, y_batch=a, a_batch=values, explain_func=explain_np, device="cpu",
                              batch_size=len(x))))
# ---------------------------------------------------------------------------------------------------------------------


def versions() -> str:
    out = []
    for name in ("torch", "captum", "shap", "lime", "quantus", "numpy"):
        try: importlib.import_module(name); out.append(f"{name} {importlib.metadata.version(name)}")
        except Exception: out.append(f"{name} missing")
    import rlexplain
    return ", ".join(out) + f", rlexplain {rlexplain.__version__}"


def have(mod: str) -> bool:
    try: importlib.import_module(mod); return True
    except Exception: return False


def at_threads(n: int, f):
    "`f` run at `n` torch intra-op threads, the process's count restored after (a peer's setting, not rlexplain's)."
    def run():
        old = torch.get_num_threads(); torch.set_num_threads(n)
        try: return f()
        finally: torch.set_num_threads(old)
    return run


def build(args):
    "{row: {condition: zero-argument callable returning values (or a float)}} and the rows' descriptions."
    from rlexplain.agent_zoo import load_best_agent
    from rlexplain.attribution import LIME_SEGMENTATIONS
    from rlexplain.compute import compute_settings
    pol, card = load_best_agent("ALE/Breakout-v5", "dqn", device="cpu")
    tab, tcard = load_best_agent("LunarLander-v3", None, device="cpu")
    x, bg = rollout_states(pol, card, args.states, 100, seed=3)
    tx, tbg = rollout_states(tab, tcard, args.tabular_states, 100, seed=3)
    a, ta = greedy(pol, x), greedy(tab, tx)
    s = compute_settings(pol); batch = s.batch_size
    M, T = pol.module, tab.module
    Mshap = copy.deepcopy(M)   # shap's explainers leave attributes and hooks on the modules they see: not on the policy's own
    print(f"image agent: {card['id']} ({card['env_id']}), {len(x)} states, {len(bg)} references, rlexplain settings: {s}")
    print(f"tabular agent: {tcard['id']} ({tcard['env_id']}), {len(tx)} states, {len(tbg)} references")
    seg = LIME_SEGMENTATIONS["slic"][0]
    ig100 = dict(background=bg, n_background=100, n_steps=50)
    n = args.ris_neighbors; xs_ris = x[: args.ris_states]; a_ris = a[: args.ris_states]
    ig0 = lambda xx, aa: rx_explain("integrated_gradients", pol, xx, aa, baseline="zeros", n_steps=50)
    ig0_np = lambda model, inputs, targets, **kw: captum_ig(M, inputs, targets)
    ris_att = {}
    def rx_ris_row():
        att = ris_att.setdefault("att", rx_attribution("integrated_gradients", pol, xs_ris, a_ris, baseline="zeros", n_steps=50))
        return rx_ris(pol, xs_ris, att, n)
    def quantus_ris_row():
        v = ris_att.setdefault("cap", captum_ig(M, xs_ris, a_ris))
        return quantus_ris(M, xs_ris, a_ris, v, ig0_np, n, 0.05 * float(xs_ris.std()))
    def rx_ris_same():
        v = ris_att.setdefault("cap", captum_ig(M, xs_ris, a_ris))
        return rx_ris_callable(pol, lambda xx, aa: captum_ig(M, xx, aa), xs_ris, v, a_ris, n)
    def quantus_ris_same():
        v = ris_att.setdefault("cap", captum_ig(M, xs_ris, a_ris))
        return quantus_ris(M, xs_ris, a_ris, v, ig0_np, n, 0.05 * float(xs_ris.std()))
    q = have("quantus")
    rows = {
        "occlusion": {"rlexplain": lambda: rx_explain("occlusion", pol, x, a, patch=2, color=0.0, softmax=False),
                      "captum": lambda: captum_occlusion(M, x, a, batch)},
        "lime_slic": {"rlexplain": lambda: rx_explain("lime_slic", pol, x[:args.lime_states], a[:args.lime_states]),
                      "lime": lambda: lime_slic(M, x[:args.lime_states], a[:args.lime_states], batch, seg)},
        "tabular_ig": {"rlexplain": lambda: rx_explain("integrated_gradients", tab, tx, ta, background=tbg, n_background=100, n_steps=50),
                       "captum": lambda: captum_ig(T, tx, ta, tbg)},
        "ig_image": {"rlexplain": lambda: ig0(x, a), "captum": lambda: captum_ig(M, x, a)},
        "ig_image_100": {"rlexplain": lambda: rx_explain("integrated_gradients", pol, x[:args.ig100_states], a[:args.ig100_states], **ig100),
                         "captum": lambda: captum_ig(M, x[:args.ig100_states], a[:args.ig100_states], bg)},
        "gradient_shap": {"rlexplain": lambda: rx_explain("gradient_shap", pol, x, a, background=bg, n_background=100, n_samples=200),
                          "shap": lambda: shap_gradient(Mshap, x, a, bg), "captum": lambda: captum_gradient_shap(M, x, a, bg)},
        "deep_shap": {"rlexplain": lambda: rx_explain("deep_shap", pol, x, a, background=bg, n_background=100),
                      "shap": lambda: shap_deep(Mshap, x, a, bg), "captum": lambda: captum_deeplift_shap(M, x, a, bg)},
        "ris": {"rlexplain": rx_ris_row, **({"quantus": quantus_ris_row} if q else {})},
        "ris_same_explainer": {"rlexplain": rx_ris_same, **({"quantus": quantus_ris_same} if q else {})},
    }
    # the rlexplain references of the 100-reference rows are drawn from `bg` with seed 42; with exactly 100 states in bg,
    # both libraries average over the same 100 references
    pt = [int(t) for t in str(args.peer_threads).split(",") if t.strip()]
    for m in rows:   # each peer at each thread count: separate conditions "peer@Nt"
        rows[m] = {c: f for c0, f0 in rows[m].items()
                   for c, f in ([(c0, f0)] if c0 == "rlexplain" else [(f"{c0}@{n}t", at_threads(n, f0)) for n in pt])}
    print(f"threads: rlexplain {torch.get_num_threads()} torch thread(s) x {s.workers} worker(s) (its policy); peers at {pt} torch thread(s) each")
    if not q: print("quantus: not importable, the RIS rows have no peer (pip install --no-deps --target DIR quantus==0.6.0 cachetools; --peer-path DIR)")
    want = [m for m in args.methods.split(",") if m]
    bad = [m for m in want if m not in rows]
    if bad: raise SystemExit(f"unknown methods {bad}; known: {list(rows)}")
    sizes = {"occlusion": len(x), "lime_slic": min(len(x), args.lime_states), "tabular_ig": len(tx), "ig_image": len(x),
             "ig_image_100": min(len(x), args.ig100_states), "gradient_shap": len(x), "deep_shap": len(x),
             "ris": len(xs_ris), "ris_same_explainer": len(xs_ris)}
    return {m: rows[m] for m in want}, sizes


COMPARABLE = {("tabular_ig", "captum"), ("ig_image", "captum"), ("ig_image_100", "captum"), ("deep_shap", "captum"), ("deep_shap", "shap")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--states", type=int, default=4, help="image states (occlusion, IG, GradientSHAP, DeepSHAP)")
    ap.add_argument("--lime-states", type=int, default=2)
    ap.add_argument("--ig100-states", type=int, default=2)
    ap.add_argument("--ris-states", type=int, default=4)
    ap.add_argument("--ris-neighbors", type=int, default=10)
    ap.add_argument("--tabular-states", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None, help="torch threads of the process, so of rlexplain (default: rlexplain's policy, 1)")
    ap.add_argument("--peer-threads", default=f"1,{TORCH_DEFAULT}" if TORCH_DEFAULT > 1 else "1", help="torch threads of the peers, comma-separated: each is a condition")
    ap.add_argument("--busy", action="store_true", help="one busy process beside the run")
    ap.add_argument("--methods", default="occlusion,lime_slic,tabular_ig,ig_image,ig_image_100,gradient_shap,deep_shap,ris,ris_same_explainer")
    ap.add_argument("--peer-path", default=None, help="a folder to import missing peers (Quantus) from")
    args = ap.parse_args()
    if args.peer_path: sys.path.append(args.peer_path)
    if args.threads: torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    with busy(args.busy): run(args)


def run(args):
    la0 = os.getloadavg()
    print("machine:", machine(), "| busy process:", "yes" if args.busy else "no")
    print(f"load average before: {la0[0]:.2f} {la0[1]:.2f} {la0[2]:.2f} | torch's default threads {TORCH_DEFAULT}, interop {torch.get_num_interop_threads()}")
    print("settings: " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()))
    print("versions:", versions())
    print("rlexplain API:", "explain()" if RX_EXPLAIN else "explainer().explain()", "+", getattr(RX_SCORE, "__module__", "?") + ".score")
    rows, sizes = build(args)
    times = {m: {c: [] for c in conds} for m, conds in rows.items()}
    cpu = {m: {c: [] for c in conds} for m, conds in rows.items()}   # process CPU seconds (all threads): robust to other jobs' load
    last = {}
    for m, conds in rows.items():     # one untimed warm-up call each (imports, first-call allocations, calibration)
        for c, f in conds.items(): last[(m, c)] = f()
    for r in range(args.rounds):
        for m, conds in rows.items():
            for c in rotated(conds, r):
                c0, t0 = time.process_time(), time.perf_counter(); last[(m, c)] = conds[c]()
                times[m][c].append(time.perf_counter() - t0); cpu[m][c].append(time.process_time() - c0)
        print(f"round {r + 1}/{args.rounds} done (load {os.getloadavg()[0]:.2f})", flush=True)
    la1 = os.getloadavg()
    print(f"\nmedian seconds per call over {args.rounds} interleaved rounds (each call: setup + all its states); ratio = peer / rlexplain")
    print(f"{'method':<20}{'states':>7}{'rlexplain':>11}  {'peer':<12}{'peer s':>9}{'ratio':>8}  {'max|d|/max|v|':>13}")
    for m, conds in rows.items():
        rx = statistics.median(times[m]["rlexplain"])
        peers = [c for c in conds if c != "rlexplain"] or ["-"]
        for i, c in enumerate(peers):
            head = f"{m:<20}{sizes[m]:>7}{rx:>11.3f}" if i == 0 else " " * 38
            if c == "-": print(head + "  (no peer installed)"); continue
            ps = statistics.median(times[m][c])
            d = ""
            if (m, c.split("@")[0]) in COMPARABLE:
                v, w = np.asarray(last[(m, "rlexplain")], np.float64), np.asarray(last[(m, c)], np.float64)
                if v.shape == w.shape: d = f"{np.abs(v - w).max() / max(np.abs(w).max(), 1e-12):.1e}"
            print(f"{head}  {c:<12}{ps:>9.3f}{ps / rx:>8.2f}  {d:>13}")
        named = [c for c in peers if c != "-"]
        if len(named) > 1:
            best = min(named, key=lambda c: statistics.median(times[m][c]))
            print(" " * 38 + f"  {'best':<12}{statistics.median(times[m][best]):>9.3f}{statistics.median(times[m][best]) / rx:>8.2f}  ({best})")
    print("\nmedian process CPU seconds per call (all threads; less sensitive than wall time to other processes on a busy machine, "
          "but it counts a second thread's work, so it favours single-threaded code)")
    for m, conds in rows.items():
        rx = statistics.median(cpu[m]["rlexplain"])
        print(f"  {m:<20} rlexplain {rx:8.3f} | " + " | ".join(f"{c} {statistics.median(cpu[m][c]):8.3f} (ratio {statistics.median(cpu[m][c]) / rx:.2f})"
                                                          for c in conds if c != "rlexplain"))
    print(f"\nload average after: {la1[0]:.2f} {la1[1]:.2f} {la1[2]:.2f} | all rounds (s): " +
          "; ".join(f"{m}/{c} " + ",".join(f"{t:.2f}" for t in ts) for m, cs in times.items() for c, ts in cs.items()))


if __name__ == "__main__":
    main()
