"""Explanation time per state of every XRL-Bench explainer, printed (never asserted), next to the paper's goals
(Xiong et al. 2024, Figure 2): TabularSHAP <= 3 ms per state on LunarLander, DeepSHAP <= 0.234 s per state on a
Breakout-sized image input (Nature CNN on (4, 84, 84)).

    python bench/xrlbench.py [--n 200] [--image-n 4] [--image-methods DeepSHAP PS] [--conditions default "1 thread"] [--busy]

Conditions, interleaved over `--repeats` rounds in an order rotated each round (medians reported): `default` (rlexplain's settings: one torch thread, the
policy's calibrated workers), `1 thread` (one torch thread, one worker) and `torch default` (torch's own thread count:
one thread per physical core, 2 on the 2-core machine; one worker). The explainer's setup (fitting a student, building a
background) is timed apart and printed in its own table. `--busy` runs one busy process beside the benchmark (a shared laptop or CI box).

Uses the XRL-Bench agents in ../shared/agents/xrl-bench when present, else randomly initialised MLPs of the same
shape (timings are about the network's size, not its weights).
"""
import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from _common import TORCH_DEFAULT, busy, machine, rotated, use
from rlexplain.core import Policy
from rlexplain.attribution import explainer
from rlexplain.xrlbench import TABULAR_METHODS, dataset_arrays, generate_dataset, load_xrlbench_policy, xrlbench_mlp

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


CONDITIONS = ("default", "1 thread", "torch default")


def use_condition(policy, condition: str, default) -> None:
    "Thread count and workers of one condition (see the module docstring)."
    threads, workers = {"default": (default.threads, default.workers), "1 thread": (1, 1), "torch default": (TORCH_DEFAULT, 1)}[condition]
    use(policy, threads, workers, default.layout, default.batch_size)


def time_method(name, policy, background, states, **kw) -> dict:
    "Setup (the fit: students, backgrounds) and explanation time of one method, through the one road (`explainer(name).explain`)."
    ex = explainer(name, background=background, **kw)       # XRL-Bench's names are aliases of the registry's
    warm = ex.explain(policy, states[:2])    # fits once per (policy, background); warm-up: thread pools, oneDNN kernels, LightGBM's OpenMP team
    e = ex.explain(policy, states)           # the fitted explainer is cached: this call only explains
    row = {"method": name, "setup_s": warm.timing.get("setup_s", 0.0),
           "ms_per_state": 1e3 * e.timing.get("explain_s", e.timing["total_s"]) / len(states), "importance": e.values}
    if "agreement" in e.params: row.update(student_agreement=e.params["agreement"], student_trees=e.params["n_trees"])
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200, help="tabular states explained per method")
    ap.add_argument("--dataset", type=int, default=5000, help="background dataset states")
    ap.add_argument("--conditions", nargs="*", default=list(CONDITIONS), help=f"of {CONDITIONS}")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--busy", action="store_true", help="run one busy process beside the benchmark")
    ap.add_argument("--image-n", type=int, default=4, help="image states explained")
    ap.add_argument("--image-methods", nargs="*", default=["DeepSHAP"])
    ap.add_argument("--image-zoo", action="store_true", help="time the zoo's ALE Breakout DQN (compact CNN) instead of a Nature CNN")
    ap.add_argument("--envs", nargs="*", default=["CartPole-v1", "LunarLander-v3"], help="tabular environments (none: skip)")
    ap.add_argument("--methods", nargs="*", default=list(TABULAR_METHODS), help="tabular methods")
    args = ap.parse_args()
    with busy(args.busy): run(args)


def run(args):
    from rlexplain.compute import compute_settings
    print(f"machine: {machine()} | busy process: {'yes' if args.busy else 'no'}")
    jobs = []    # (env, policy, background, states, method)
    shapes = {"CartPole-v1": ("CartPole", 4, 2), "LunarLander-v3": ("LunarLander", 8, 4), "FlappyBird-v0": ("FlappyBird", 12, 2)}
    for env_id in args.envs:
        game, d, a = shapes[env_id]
        pol = tabular_policy(game, d, a)
        df = generate_dataset(pol, env_id, n_states=args.dataset, seed=0, min_episodes=5)
        X, _ = dataset_arrays(df)
        states = X[np.random.default_rng(0).choice(len(X), min(args.n, len(X)), replace=False)]
        jobs += [(env_id, pol, df, states, m) for m in args.methods]
    torch.manual_seed(0)
    if args.image_zoo:
        from rlexplain.agent_zoo import load_best_agent
        img = load_best_agent("ALE/Breakout-v5", "dqn", device="cpu")[0]
    else:
        img = Policy.from_module(nature_cnn(), (4, 84, 84), device="cpu", name="nature-cnn")
    rng = np.random.default_rng(0)
    bg = rng.random((100, 4, 84, 84), dtype=np.float32)
    xs = rng.random((args.image_n, 4, 84, 84), dtype=np.float32)
    jobs += [("image", img, bg, xs, m) for m in args.image_methods]
    defaults = {id(p): compute_settings(p) for _, p, *_ in jobs}
    print("default settings:", {p.name: str(defaults[id(p)]) for _, p, *_ in jobs})
    rows, first = {}, {}
    for r in range(args.repeats):
        for env, pol, back, states, m in jobs:
            for c in rotated(args.conditions, r):
                use_condition(pol, c, defaults[id(pol)])
                row = time_method(m, pol, back, states)
                imp = row.pop("importance")
                if (env, m) not in first: first[(env, m)] = imp
                row["max_abs_diff"] = float(np.abs(np.asarray(imp, np.float64) - first[(env, m)]).max())
                rows.setdefault((env, pol.name, m, c), []).append(row)
    out = []
    for (env, pname, m, c), rs in rows.items():
        row = {"env": env, "policy": pname, "method": m, "condition": c, "ms_per_state": statistics.median(x["ms_per_state"] for x in rs),
               "setup_s": statistics.median(x["setup_s"] for x in rs), "max_abs_diff": max(x["max_abs_diff"] for x in rs)}
        out.append(row)
    t = pd.DataFrame(out)
    wide = t.pivot_table(index=["env", "method"], columns="condition", values="ms_per_state", sort=False)[list(args.conditions)]
    if "default" in wide and "1 thread" in wide: wide["default / 1 thread"] = wide["default"] / wide["1 thread"]
    wide["goal_ms"] = [GOALS.get(k) for k in wide.index]
    wide["max_abs_diff"] = t.groupby(["env", "method"], sort=False)["max_abs_diff"].max()
    pd.set_option("display.width", 200)
    print(f"ms per state, median of {args.repeats} interleaved rounds; tabular states: {args.n}; image states: {args.image_n}; "
          f"TabularSHAP's TreeSHAP: LightGBM on its own OpenMP threads; agents: {'XRL-Bench' if AGENTS.exists() else 'random MLPs'}; "
          f"load after: {os.getloadavg()[0]:.2f}")
    print(wide.round(3).to_string())
    setup = t.pivot_table(index=["env", "method"], columns="condition", values="setup_s", sort=False)[list(args.conditions)]
    print(f"\nsetup seconds (the first explain: students, backgrounds), median of {args.repeats}; torch default = {TORCH_DEFAULT} threads")
    print(setup.round(3).to_string())

if __name__ == "__main__":
    main()
