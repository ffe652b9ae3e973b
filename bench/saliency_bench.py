"""Seconds per state of the saliency benchmark's metrics, printed (never asserted):

- the insertion metric (2 start images x 85 steps = 170 network evaluations per state) with all steps of a
  state in one batch (several states per batch) versus one image per forward pass;
- the sanity check (cascading re-initialisation of every layer + one saliency map per step) per state, for
  Occlusion Sensitivity at the paper's final parameters (patch 2) and the three similarity measures;
- the three similarity measures alone per map pair, and HOG features vectorised vs scikit-image's `hog` per map.

The network is the benchmark's DQN shape (conv 32@8x8/4, 64@4x4/2, 64@3x3/1, dense 256, 4 actions) with random
weights on real Toybox Breakout states. CPU timings on a shared machine vary; the load average is printed.

    python bench/saliency_bench.py [--threads 1] [--states 8] [--device cpu]
"""
import argparse
import os
import time

import numpy as np
import torch
from torch import nn

from rlexplain.core import Policy
from rlexplain.envs import ToyboxEnv
from rlexplain.attribution import explain
from rlexplain.attribution import PAPER_PARAMS
from rlexplain.saliency_bench import insertion_curves, map_similarity, sanity_check


def nature_cnn(hidden: int = 256, n_actions: int = 4) -> nn.Module:
    return nn.Sequential(nn.Conv2d(4, 32, 8, 4), nn.ReLU(), nn.Conv2d(32, 64, 4, 2), nn.ReLU(),
                         nn.Conv2d(64, 64, 3, 1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(3136, hidden), nn.ReLU(), nn.Linear(hidden, n_actions))


def breakout_states(n: int, seed: int = 0) -> np.ndarray:
    "`(n, 4, 84, 84)` uint8 Toybox Breakout frame stacks from a random-action episode."
    env = ToyboxEnv("breakout"); obs, _ = env.reset(seed=seed); rng = np.random.default_rng(seed); out = []
    for t in range(20 + 10 * n):
        obs, _, term, trunc, _ = env.step(int(rng.integers(env.action_space.n)))
        if term or trunc: obs, _ = env.reset()
        if t >= 20 and t % 10 == 0: out.append(obs)
    return np.stack(out[:n])


def timed(fn):
    t = time.perf_counter(); r = fn(); return time.perf_counter() - t, r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--states", type=int, default=8)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(a.threads); torch.manual_seed(0)
    pol = Policy.from_module(nature_cnn(), (4, 84, 84), device=a.device)
    obs = breakout_states(a.states)
    maps = np.random.default_rng(0).random((len(obs), 84, 84))
    print(f"load average before: {os.getloadavg()[0]:.2f}; torch threads {a.threads}; device {pol.device}; {len(obs)} states")
    insertion_curves(pol, obs[:1], maps[:1])                                   # warm-up
    for label, bs in (("batched (batch_size=1024: 6 states x 170 images per pass)", 1024),
                      ("one state per pass (batch_size=170)", 170),
                      ("unbatched (batch_size=1: one image per pass)", 1)):
        n = len(obs) if bs > 1 else min(2, len(obs))
        dt, _ = timed(lambda: insertion_curves(pol, obs[:n], maps[:n], batch_size=bs))
        print(f"insertion metric, {label:<58s} {dt / n:8.3f} s per state")
    ref = explain("occlusion", pol, obs[:2], **PAPER_PARAMS["occlusion"][1])
    dt, sc = timed(lambda: sanity_check(pol, obs[:2], "occlusion", reference=ref))
    print(f"sanity check, occlusion patch 2, {len(sc.layers)} layers (maps + similarities)      {dt / 2:8.3f} s per state")
    dt_map, _ = timed(lambda: explain("occlusion", pol, obs[:2], **PAPER_PARAMS["occlusion"][1]))
    print(f"  of which one occlusion map (x {len(sc.layers)} per state)                          {dt_map / 2:8.3f} s per map")
    m1, m2 = np.random.default_rng(1).random((2, 20, 84, 84))
    for metric in ("spearman", "ssim", "hog"):
        dt, _ = timed(lambda: map_similarity(m1, m2, metrics=(metric,)))
        print(f"similarity {metric:<8s} (max over map and inverse)                            {dt / 20 * 1e3:8.2f} ms per pair")
    from skimage.feature import hog
    from rlexplain.attribution.metrics.randomisation import hog_features, minmax
    dt_v, fv = timed(lambda: hog_features(m1))
    dt_s, fs = timed(lambda: np.stack([hog(x, pixels_per_cell=(3, 3)) for x in minmax(m1)]))
    print(f"HOG features: vectorised {dt_v / 20 * 1e3:6.2f} ms, scikit-image hog {dt_s / 20 * 1e3:6.2f} ms per map (equal: {np.array_equal(fv, fs)})")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
