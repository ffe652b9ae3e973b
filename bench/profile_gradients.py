"""Where the time of rlexplain's gradient explainers (IG, GradientSHAP, DeepSHAP) and of RIS goes, next to captum, shap and
Quantus on the same network and states (the zoo's ALE Breakout DQN). Printed, never asserted.

Per call it counts, with a forward hook on the network and wrappers around `torch.autograd.grad` / `Tensor.backward`:
- forward passes of the network and the rows they carried (batch-size histogram),
- backward passes (autograd roots) and
- wall seconds, then the `--top` functions by own time (cProfile), so that setup (explainer construction, deep copies of the
  module, the references' forward), per-state Python loops and small batches show up by name.
`--torch-profiler` adds torch.profiler's operator table (self CPU time) for each call. cProfile sees the calling thread only: with
the policy's workers, rlexplain's passes show as `acquire` (waiting on the pool); `--workers 1` runs them in the calling thread.

What it found (issue 28.1, Breakout DQN, 4 states, 100 references; before -> after the batched explainers of
nbs/attribution/16_gradient.ipynb, whose values equal the old ones to float rounding, tests/test_gradient_speedups.py):
- DeepSHAP ran shap's DeepExplainer: per state a forward and a backward pass over 2M = 200 rows (the references' forward again
  for every state), one explainer (a deep copy and a 100-row forward) per worker and action, and the references' forward once
  more for the base values: 13 forwards, 1212 rows. Now the references' and the states' ReLU values are recorded once and the
  frozen-multiplier network is differentiated on M rows per state: 104 + 400 rows, one forward of the references in all.
- GradientSHAP ran shap's per-sample Python loop (3,200 tensor clones for 4 states x 200 samples, a variance never used) and a
  100-row forward of the references in shap's constructor, with one action group per call. Now every state's draws (shap's, in
  its order) build one batch; the passes run on the workers.
- IG ran captum once per action group with a step-batched split (3 passes for 200 rows, 50 for 5,000) and captum's per-step
  Python concatenations. Now all states and actions share passes of whole paths, on the workers; RIS re-explains through it.
- Two intra-op threads made a backward pass 2-8x slower than one on this busy 2-core machine; rlexplain runs 1 thread x workers.

    python bench/profile_gradients.py [--states 4] [--methods ig_image,ig_image_100,gradient_shap,deep_shap,ris] [--top 12] [--workers 1]
"""
import argparse
import collections
import cProfile
import io
import os
import pstats
import sys
import time
import warnings

import numpy as np
import torch

from _common import machine
sys.path.insert(0, os.path.dirname(__file__))
import peers as P   # the same states, peers and rlexplain adapter as bench/peers.py


class Counter:
    """Forward passes (rows per pass) of `module`'s first conv layer, in any copy of it (shap and rlexplain's DeepSHAP
    explain deep copies), and backward passes anywhere, while active."""
    def __init__(self, module):
        first = next(m for m in module.modules() if isinstance(m, torch.nn.Conv2d))
        self.sig, self.rows, self.backward = (first.in_channels, first.out_channels, first.kernel_size), [], 0
    def __enter__(self):
        from torch.nn.modules.module import register_module_forward_hook
        def hook(m, i, o):
            if isinstance(m, torch.nn.Conv2d) and (m.in_channels, m.out_channels, m.kernel_size) == self.sig: self.rows.append(int(i[0].shape[0]))
        self.h = register_module_forward_hook(hook)
        self._grad, self._bw = torch.autograd.grad, torch.Tensor.backward
        me = self
        def grad(*a, **k): me.backward += 1; return me._grad(*a, **k)
        def backward(self_, *a, **k): me.backward += 1; return me._bw(self_, *a, **k)
        torch.autograd.grad, torch.Tensor.backward = grad, backward
        return self
    def __exit__(self, *exc):
        self.h.remove(); torch.autograd.grad, torch.Tensor.backward = self._grad, self._bw
    def summary(self) -> str:
        hist = collections.Counter(self.rows)
        top = ", ".join(f"{b}x{n}" for b, n in sorted(hist.items(), key=lambda kv: -kv[0] * kv[1])[:5])
        return f"{len(self.rows)} forwards, {sum(self.rows)} rows (rows x passes: {top}), {self.backward} backward calls"


def profile(name, fn, module, top: int, torch_prof: bool):
    pr = cProfile.Profile()
    with Counter(module) as c:
        t0 = time.perf_counter(); pr.enable(); fn(); pr.disable(); dt = time.perf_counter() - t0
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    lines = [l for l in s.getvalue().splitlines() if l.strip() and not l.startswith(("   Ordered", "   List reduced"))]
    print(f"\n--- {name}: {dt:.2f} s | {c.summary()}")
    print("\n".join(lines[-(top + 1):]))
    if torch_prof:
        from torch.profiler import ProfilerActivity, profile as tprofile
        with tprofile(activities=[ProfilerActivity.CPU], record_shapes=False) as prof: fn()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=top))
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--states", type=int, default=4)
    ap.add_argument("--ig100-states", type=int, default=1)
    ap.add_argument("--ris-neighbors", type=int, default=10)
    ap.add_argument("--methods", default="ig_image,ig_image_100,gradient_shap,deep_shap,ris")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--torch-profiler", action="store_true")
    ap.add_argument("--peer-path", default=None)
    ap.add_argument("--workers", type=int, default=None, help="rlexplain's worker threads (1: its passes run where cProfile sees them)")
    args = ap.parse_args()
    if args.peer_path: sys.path.append(args.peer_path)
    warnings.filterwarnings("ignore")
    from rlexplain.agent_zoo import load_best_agent
    from rlexplain.compute import compute_settings
    print("machine:", machine())
    la = os.getloadavg(); print(f"load average before: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}; versions: {P.versions()}")
    pol, card = load_best_agent("ALE/Breakout-v5", "dqn", device="cpu")
    if args.workers:
        import dataclasses
        pol.apply_settings(dataclasses.replace(compute_settings(pol), workers=args.workers, source="override"))
    x, bg = P.rollout_states(pol, card, args.states, 100, seed=3); a = P.greedy(pol, x)
    print(f"agent {card['id']}, {len(x)} states, {len(bg)} references, rlexplain settings {pol.settings}")
    M = pol.module; import copy; Ms = copy.deepcopy(M)
    n = args.ris_neighbors; x1, a1 = x[:args.ig100_states], a[:args.ig100_states]
    ig0_np = lambda model, inputs, targets, **kw: P.captum_ig(M, inputs, targets)
    att = {}
    cases = {
        "ig_image": [("rlexplain", lambda: P.rx_explain("integrated_gradients", pol, x, a, baseline="zeros", n_steps=50)),
                     ("captum", lambda: P.captum_ig(M, x, a))],
        "ig_image_100": [("rlexplain", lambda: P.rx_explain("integrated_gradients", pol, x1, a1, background=bg, n_background=100, n_steps=50)),
                         ("captum", lambda: P.captum_ig(M, x1, a1, bg))],
        "gradient_shap": [("rlexplain", lambda: P.rx_explain("gradient_shap", pol, x, a, background=bg, n_background=100, n_samples=200)),
                          ("shap", lambda: P.shap_gradient(Ms, x, a, bg)), ("captum", lambda: P.captum_gradient_shap(M, x, a, bg))],
        "deep_shap": [("rlexplain", lambda: P.rx_explain("deep_shap", pol, x, a, background=bg, n_background=100)),
                      ("shap", lambda: P.shap_deep(Ms, x, a, bg)), ("captum", lambda: P.captum_deeplift_shap(M, x, a, bg))],
        "ris": [("rlexplain", lambda: P.rx_ris(pol, x, att.setdefault("a", P.rx_attribution("integrated_gradients", pol, x, a, baseline="zeros", n_steps=50)), n)),
                ("quantus", lambda: P.quantus_ris(M, x, a, att.setdefault("c", P.captum_ig(M, x, a)), ig0_np, n, 0.0))],
    }
    for m in args.methods.split(","):
        for lib, fn in cases[m]:
            if lib == "quantus" and not P.have("quantus"): print(f"\n--- {m}/{lib}: quantus not importable"); continue
            fn()   # warm-up (imports, calibration) outside the profile
            profile(f"{m} / {lib}", fn, M, args.top, args.torch_profiler)
    la = os.getloadavg(); print(f"\nload average after: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")


if __name__ == "__main__":
    main()
