"""Seconds per saliency map, printed (never asserted), for a Nature-CNN-sized Q-network on one (4, 84, 84)
Toybox Breakout state: the five methods at the final parameters of Huber et al. (2023, Appendix C.2) and at
patch size / radius 1, plus the network's own forward throughput for reference.

The network (conv 32@8x8/4, 64@4x4/2, 64@3x3/1, dense 256 as in the benchmark's DQN, or 512 as in Nature DQN;
4 actions) has random weights: the timings depend on its size, not on its training. CPU timings on a shared
machine vary with what else runs; the load average is printed before and after.

    python bench/saliency.py [--threads 2] [--repeats 3] [--hidden 256] [--device cpu] [--skip-fine]
    python bench/saliency.py --zoo ALE/Breakout-v5     # the zoo's own DQN agent (compact CNN) on a real ALE state
"""
import argparse
import os
import statistics
import time

import numpy as np
import torch
from torch import nn

from rlexplain.core import Policy
from rlexplain.envs import ToyboxEnv
from rlexplain.saliency import RISE, lime, noise_sensitivity, occlusion, sarfa


def nature_cnn(hidden: int = 256, n_actions: int = 4) -> nn.Module:
    return nn.Sequential(nn.Conv2d(4, 32, 8, 4), nn.ReLU(), nn.Conv2d(32, 64, 4, 2), nn.ReLU(),
                         nn.Conv2d(64, 64, 3, 1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(3136, hidden), nn.ReLU(), nn.Linear(hidden, n_actions))


def breakout_state(steps: int = 60, seed: int = 0) -> np.ndarray:
    "A real (1, 4, 84, 84) uint8 Breakout frame stack after `steps` random steps (segmentations depend on content)."
    env = ToyboxEnv("breakout"); obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs, _, term, trunc, _ = env.step(int(rng.integers(env.action_space.n)))
        if term or trunc: obs, _ = env.reset()
    return obs[None]


def game_state(env_id: str, env_kwargs: dict, steps: int = 60, seed: int = 0) -> np.ndarray:
    "A real (1, 4, 84, 84) uint8 frame stack of any make_env game after `steps` random steps."
    from rlexplain.envs import make_env
    env = make_env(env_id, **env_kwargs); obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs, _, term, trunc, _ = env.step(int(rng.integers(env.action_space.n)))
        if term or trunc: obs, _ = env.reset()
    return np.asarray(obs)[None]


def seconds(fn, repeats: int) -> float:
    fn()                                              # warm-up (allocator, oneDNN kernels, lru caches)
    ts = []
    for _ in range(repeats):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per case (median reported)")
    ap.add_argument("--hidden", type=int, default=256, help="dense layer width (256 benchmark DQN, 512 Nature DQN)")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    ap.add_argument("--batch-size", type=int, default=512, help="perturbed images per forward pass")
    ap.add_argument("--skip-fine", action="store_true", help="skip the slow patch/radius 1 cases")
    ap.add_argument("--zoo", metavar="ENV_ID", help="time the zoo's best DQN agent for ENV_ID (e.g. ALE/Breakout-v5) instead")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.zoo:
        from rlexplain.agents import load_best_agent
        pol, card = load_best_agent(a.zoo, "dqn", device=a.device)
        obs = game_state(a.zoo, card.get("env_kwargs", {}))
        net = f"zoo agent {card['id']} ({card.get('features', 'compact')} CNN)"
    else:
        pol = Policy.from_module(nature_cnn(a.hidden), (4, 84, 84), device=a.device)
        obs, net = breakout_state(), f"Nature-CNN-sized, dense {a.hidden}"
    bs = a.batch_size
    print(f"torch {torch.__version__}, {a.threads} threads, device {pol.device}, {net}, batch {bs}; "
          f"load average before: {os.getloadavg()[0]:.2f} (CPU shared with other jobs)")

    x = torch.rand(bs, 4, 84, 84, device=pol.device)
    t = seconds(lambda: pol.outputs(x, batch_size=bs), a.repeats)
    print(f"forward pass: {t / bs * 1e3:.3f} ms per image ({bs / t:,.0f} images/s)\n")

    # a network that costs almost nothing: what is left is the method's own work (perturbations, fitting, resizing)
    tiny = Policy.from_module(nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 4)), (4, 84, 84), device=a.device)
    rises = {id(pol): RISE(1000, 8, 0.5, seed=0, batch_size=bs), id(tiny): RISE(1000, 8, 0.5, seed=0, batch_size=bs)}
    t0 = time.perf_counter(); rises[id(pol)].masks(84, 84); t_masks = time.perf_counter() - t0
    final = [
        ("occlusion  patch 2, black", 42 * 42, lambda p: occlusion(p, obs, patch=2, batch_size=bs)),
        ("noise sens r 3, blur", 28 * 28, lambda p: noise_sensitivity(p, obs, radius=3, batch_size=bs)),
        ("sarfa      r 2, black", 42 * 42, lambda p: sarfa(p, obs, radius=2, batch_size=bs)),
        ("sarfa      r 2, blur", 42 * 42, lambda p: sarfa(p, obs, radius=2, perturbation="blur", batch_size=bs)),
        ("rise       N 1000, s 8, p 0.5", 1000, lambda p: rises[id(p)](p, obs)),
        ("lime       slic, 2000 samples", 2000, lambda p: lime(p, obs, segmentation="slic", batch_size=bs)),
        ("lime       quickshift, 1500", 1500, lambda p: lime(p, obs, segmentation="quickshift", batch_size=bs)),
        ("lime       felzenszwalb, 1000", 1000, lambda p: lime(p, obs, segmentation="felzenszwalb", batch_size=bs)),
    ]
    fine = [
        ("occlusion  patch 1", 84 * 84, lambda p: occlusion(p, obs, patch=1, batch_size=bs)),
        ("noise sens r 1, blur", 84 * 84, lambda p: noise_sensitivity(p, obs, radius=1, batch_size=bs)),
        ("sarfa      r 1, black", 84 * 84, lambda p: sarfa(p, obs, radius=1, batch_size=bs)),
    ]
    head = f"{'forwards':>8s} {'s/map':>8s} {'overhead':>9s}"
    print(f"{'method (paper final parameters)':34s} {head}   (RISE masks drawn once: {t_masks:.3f} s)")
    for name, n, fn in final:
        print(f"{name:34s} {n:8d} {seconds(lambda: fn(pol), a.repeats):8.3f} {seconds(lambda: fn(tiny), a.repeats):9.3f}")
    if not a.skip_fine:
        print(f"\n{'patch size / radius 1':34s} {head}")
        for name, n, fn in fine:
            print(f"{name:34s} {n:8d} {seconds(lambda: fn(pol), a.repeats):8.3f} {seconds(lambda: fn(tiny), a.repeats):9.3f}")
    print("overhead = seconds per map with a near-free network (average pool + linear): the method's own work")
    segs = lime(pol, obs, segmentation="felzenszwalb", num_samples=10).params["n_segments"][0], \
        lime(pol, obs, segmentation="quickshift", num_samples=10).params["n_segments"][0], \
        lime(pol, obs, segmentation="slic", num_samples=10).params["n_segments"][0]
    print(f"\nsuperpixels on this state: felzenszwalb {segs[0]}, quickshift {segs[1]}, slic {segs[2]}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
