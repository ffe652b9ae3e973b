"""Explanation time per state of every XRL-Bench explainer, printed (never asserted), next to the paper's goals
(Xiong et al. 2024, Figure 2): TabularSHAP <= 3 ms per state on LunarLander, DeepSHAP <= 0.234 s per state on a
Breakout-sized image input (Nature CNN on (4, 84, 84)).

    python bench/xrlbench.py [--n 200] [--threads 1] [--image-n 4] [--image-methods DeepSHAP PS]

Uses the XRL-Bench agents in ../shared/agents/xrl-bench when present, else randomly initialised MLPs of the same
shape (timings are about the network's size, not its weights).
"""
import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from rlexplain.core import Policy
from rlexplain.xrlbench import (TABULAR_METHODS, dataset_arrays, generate_dataset, load_xrlbench_policy, make_explainer,
                                xrlbench_mlp)

AGENTS = Path(__file__).resolve().parents[2] / "shared" / "agents" / "xrl-bench"
GOALS = {("LunarLander-v3", "TabularSHAP"): 3.0, ("image", "DeepSHAP"): 234.0}   # ms per state


def tabular_policy(game: str, d: int, a: int) -> Policy:
    path = AGENTS / f"{game}.pth"
    if path.exists(): return load_xrlbench_policy(path, device="cpu")
    torch.manual_seed(0)
    return Policy.from_module(xrlbench_mlp(d, a), (d,), device="cpu", name=f"random-{game}")


def nature_cnn(n_actions: int = 4) -> nn.Module:
    "Mnih et al. (2015) Q-network with nn.ReLU modules: conv 32@8/4, 64@4/2, 64@3/1, dense 512."
    return nn.Sequential(nn.Conv2d(4, 32, 8, 4), nn.ReLU(), nn.Conv2d(32, 64, 4, 2), nn.ReLU(), nn.Conv2d(64, 64, 3, 1),
                         nn.ReLU(), nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, n_actions))


def time_method(name, policy, background, states, **kw) -> dict:
    t = time.perf_counter()
    ex = make_explainer(name, policy, background=background, **kw)
    setup = time.perf_counter() - t
    ex.explain(states[:2])            # warm-up: thread pools, oneDNN kernels, LightGBM's OpenMP team (paid once per process)
    e = ex.explain(states)
    row = {"method": name, "setup_s": setup, "ms_per_state": 1e3 * e.seconds_per_sample}
    if hasattr(ex, "agreement"): row.update(student_agreement=ex.agreement, student_trees=ex.n_trees)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200, help="tabular states explained per method")
    ap.add_argument("--dataset", type=int, default=5000, help="background dataset states")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--image-n", type=int, default=4, help="image states explained")
    ap.add_argument("--image-methods", nargs="*", default=["DeepSHAP"])
    ap.add_argument("--image-zoo", action="store_true", help="time the zoo's ALE Breakout DQN (compact CNN) instead of a Nature CNN")
    ap.add_argument("--envs", nargs="*", default=["CartPole-v1", "LunarLander-v3"], help="tabular environments (none: skip)")
    ap.add_argument("--methods", nargs="*", default=list(TABULAR_METHODS), help="tabular methods")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    shapes = {"CartPole-v1": ("CartPole", 4, 2), "LunarLander-v3": ("LunarLander", 8, 4), "FlappyBird-v0": ("FlappyBird", 12, 2)}
    for env_id in args.envs:
        game, d, a = shapes[env_id]
        pol = tabular_policy(game, d, a)
        df = generate_dataset(pol, env_id, n_states=args.dataset, seed=0, min_episodes=5)
        X, _ = dataset_arrays(df)
        states = X[np.random.default_rng(0).choice(len(X), min(args.n, len(X)), replace=False)]
        for m in args.methods:
            rows.append({"env": env_id, "policy": pol.name, **time_method(m, pol, df, states)})
    torch.manual_seed(0)
    if args.image_zoo:
        from rlexplain.agents import load_best_agent
        img = load_best_agent("ALE/Breakout-v5", "dqn", device="cpu")[0]
    else:
        img = Policy.from_module(nature_cnn(), (4, 84, 84), device="cpu", name="nature-cnn")
    rng = np.random.default_rng(0)
    bg = rng.random((100, 4, 84, 84), dtype=np.float32)
    xs = rng.random((args.image_n, 4, 84, 84), dtype=np.float32)
    for m in args.image_methods:
        rows.append({"env": "image", "policy": img.name, **time_method(m, img, bg, xs)})
    t = pd.DataFrame(rows)
    t["goal_ms"] = [GOALS.get((e, m)) for e, m in zip(t.env, t.method)]
    t["meets_goal"] = [None if pd.isna(g) else bool(v <= g) for v, g in zip(t.ms_per_state, t.goal_ms)]
    pd.set_option("display.width", 160)
    import os
    print(f"torch threads: {args.threads} (TabularSHAP's TreeSHAP: LightGBM on {os.cpu_count()} OpenMP threads, its explain_jobs default); tabular states: {args.n}; image states: {args.image_n}; "
          f"device: {img.device}; agents: {'XRL-Bench' if AGENTS.exists() else 'random MLPs'}")
    print(t.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
