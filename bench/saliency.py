"""Seconds per saliency map for the zoo's ALE Breakout DQN on real observations, at the final parameters of
Huber et al. (2022, Appendix C.2), printed (never asserted) with the machine, its load and the compute settings.

Conditions, interleaved over `--repeats` rounds in an order rotated each round (medians reported):
- `default`:  rlexplain's compute settings (`rlexplain.compute.compute_settings`: threads, workers, layout, batch size);
- `1 thread`: one torch thread, one worker, the calibrated layout and batch size;
- `old`:      what the package did before the thread policy: torch's own thread count, channels-last, batch 512, one worker.
- `naive`:    the same method with one forward pass per perturbed image (batch size 1, one torch thread, one worker):
              the loop of the papers' code, timed on `--naive-states` states per round, the next ones each round;
- `fwd-only`: a lower bound on any naive loop: `inputs` single-image forwards (1 thread), timed alone and scaled.
The best forward throughput is that of the best setting in a sweep over threads, workers, layouts and batch sizes in the
same run (the median of 5 runs per setting: the fastest single run of 100 under a busy scheduler is an outlier, also printed);
`fwd/best` is a map's perturbed inputs per second at the default settings over it; `of fwd` is the same over the median
throughput of a plain forward of 1764 ready-made inputs at the default settings, timed in every round beside the maps. `--busy` starts one busy process
for the duration (a shared laptop or CI box). `--save-maps F.npz` keeps the default maps; `--reference F.npz` reports the
largest difference from maps saved by another version of the package (`max|d| ref`).

    python bench/saliency.py [--states 8] [--repeats 5] [--busy] [--methods occlusion,rise] [--reference old.npz]
"""
import argparse
import os
import statistics
import time

import numpy as np
import torch

from _common import TORCH_DEFAULT, busy, machine, rotated, use
from rlexplain.agent_zoo import load_best_agent
from rlexplain.compute import compute_settings, map_batches
from rlexplain.envs import collect_rollout, make_env
from rlexplain.attribution import explain
from rlexplain.saliency import PAPER_PARAMS
from rlexplain.saliency_study import PAPER_RUNTIMES as PAPER_SECONDS   # Huber et al. (2022), GTX Titan X

INPUTS = {"occlusion": 42 * 42, "noise_sensitivity": 28 * 28, "sarfa": 42 * 42, "rise": 1000,
          "lime_slic": 2000, "lime_quickshift": 1500, "lime_felzenszwalb": 1000}   # perturbed images per map (84 x 84 states)


def forward_rate(policy, x, threads, workers, layout, batch, reps=5) -> tuple[float, float]:
    "(median, max) images per second of `reps` forwards of `x` under one setting."
    use(policy, threads, workers, layout, batch)
    rates = []
    with torch.no_grad():
        for _ in range(reps):
            t0 = time.perf_counter(); map_batches(policy.forward, x, batch, workers); rates.append(len(x) / (time.perf_counter() - t0))
    return statistics.median(rates), max(rates)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--states", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--busy", action="store_true", help="run one busy process beside the benchmark")
    ap.add_argument("--methods", default=",".join(INPUTS))
    ap.add_argument("--naive-states", type=int, default=2, help="states the naive loop explains per round")
    ap.add_argument("--save-maps", default=None, help="write the default maps to this .npz")
    ap.add_argument("--reference", default=None, help="compare the default maps with this .npz (from --save-maps)")
    args = ap.parse_args()
    with busy(args.busy): run(args)


def run(args):
    print("machine:", machine(), "| busy process:", "yes" if args.busy else "no")
    policy, card = load_best_agent("ALE/Breakout-v5", "dqn", device="cpu")
    ro = collect_rollout(make_env(card["env_id"], **card.get("env_kwargs", {})), policy, n_episodes=1, seed=3, max_steps=300, epsilon=0.05)
    states = ro.obs[np.linspace(20, len(ro.obs) - 1, args.states).astype(int)]
    default = compute_settings(policy)
    print(f"agent: {card['id']} | {args.states} states | default settings: {default}")
    x = policy.obs(np.repeat(states, 64, axis=0)[:512])
    sweep = {(t, w, l, b): forward_rate(policy, x, t, w, l, b) for t in (1, 2) for w in (1, 2) for l in ("contiguous", "channels_last")
             for b in (64, 128, 256, 512) if not (t == 2 and w == 2)}
    best_key = max(sweep, key=lambda k: sweep[k][0]); best, fastest = sweep[best_key]
    print(f"best forward throughput: {best:,.0f} img/s (median of 5; fastest single run {fastest:,.0f}) at threads={best_key[0]} "
          f"workers={best_key[1]} layout={best_key[2]} batch={best_key[3]}")
    use(policy, 1, 1, default.layout, default.batch_size)
    one = policy.obs(states[:1]); t1 = []
    with torch.no_grad():
        for _ in range(200): t0 = time.perf_counter(); policy.forward(one); t1.append(time.perf_counter() - t0)
    single = statistics.median(t1)
    print(f"fwd-only: {single * 1e3:.2f} ms per single-image forward (1 thread)")
    conds = {"default": (default.threads, default.workers, default.layout, default.batch_size),
             "1 thread": (1, 1, default.layout, default.batch_size),
             "old": (TORCH_DEFAULT, 1, "channels_last", 512)}   # torch's default: one thread per physical core
    methods = [m for m in args.methods.split(",") if m]
    conds["naive"] = (1, 1, default.layout, 1)
    times = {(c, m): [] for c in conds for m in methods}; maps = {}; fwd = []
    xf = policy.obs(np.repeat(states, INPUTS["occlusion"] // len(states) + 1, axis=0)[:INPUTS["occlusion"]])
    for r in range(args.repeats):
        use(policy, *conds["default"])
        with torch.no_grad():
            t0 = time.perf_counter(); map_batches(policy.forward, xf, default.batch_size, default.workers); fwd.append(len(xf) / (time.perf_counter() - t0))
        for m in methods:
            for c in rotated(conds, r):
                t, w, l, b = conds[c]
                use(policy, t, w, l, b)
                # the naive loop explains a different slice of the states each round, so over the rounds it sees them all
                xs = states[[(r * args.naive_states + i) % len(states) for i in range(args.naive_states)]] if c == "naive" else states
                t0 = time.perf_counter(); out = explain(m, policy, xs, **PAPER_PARAMS[m][1]); dt = time.perf_counter() - t0
                times[(c, m)].append(dt / len(xs))
                if r == 0: maps[(c, m)] = out.pixels()
    print(f"load after: {os.getloadavg()[0]:.2f}; plain forward at the default settings: {statistics.median(fwd):,.0f} img/s (median of rounds)\n")
    ref = dict(np.load(args.reference)) if args.reference else {}
    if args.save_maps: np.savez(args.save_maps, **{m: np.asarray(maps[("default", m)]) for m in methods})
    hdr = (f"{'method':18s} {'inputs':>6s} {'default':>8s} {'1 thread':>8s} {'old':>7s} {'naive':>7s} {'x naive':>7s} "
           f"{'fwd-only':>8s} {'x f-o':>6s} {'fwd/best':>8s} {'of fwd':>6s} {'paper':>6s} {'max|d|':>8s} {'max|d| ref':>10s}")
    print("seconds per map (median of", args.repeats, "interleaved rounds)\n" + hdr)
    for m in methods:
        d, o, old, naive = (statistics.median(times[(c, m)]) for c in conds)
        fwd_only = INPUTS[m] * single
        diff = float(np.abs(np.asarray(maps[("default", m)], np.float64) - np.asarray(maps[("old", m)], np.float64)).max())
        dref = (f"{float(np.abs(np.asarray(maps[('default', m)], np.float64) - ref[m]).max()):10.1e}" if m in ref else f"{'-':>10s}")
        print(f"{m:18s} {INPUTS[m]:6d} {d:8.3f} {o:8.3f} {old:7.3f} {naive:7.3f} {naive / d:7.1f} {fwd_only:8.3f} {fwd_only / d:6.1f} "
              f"{INPUTS[m] / d / best:8.0%} {INPUTS[m] / d / statistics.median(fwd):6.0%} {PAPER_SECONDS.get(m, float('nan')):6.2f} {diff:8.1e} {dref}")


if __name__ == "__main__":
    main()
