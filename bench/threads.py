"""Forward throughput (images per second) of the zoo's ALE Breakout DQN by torch threads, memory layout and batch size,
printed (never asserted) with the machine and its load, next to `Policy.outputs` at the settings
`rlexplain.compute.compute_settings` picks (and at the settings rlexplain used before it: torch's default thread count,
channels-last, batches of 1024).

Every configuration processes the same N observations (default 512) in chunks of its batch size, and the
configurations are timed in interleaved rounds (round r times each once), so that a change in the machine's load hits
them alike; the table gives the median over rounds. To measure a busy machine, start a competing process first, e.g.
`python -c "while True: pass" &`, and stop it by its id afterwards.

    python bench/threads.py [--rounds 5] [--seconds 0.3] [--n 512] [--batches 32,128,512] [--threads 1,2]
"""
import argparse
import copy
import os
import statistics
import time

from _common import TORCH_DEFAULT, machine
import torch


def rate(fn, n: int, seconds: float) -> float:
    "Images per second of `fn()` (which processes `n` images) over at least `seconds`, after one warm-up call."
    fn(); k, t0 = 0, time.perf_counter()
    while True:
        fn(); k += 1
        dt = time.perf_counter() - t0
        if dt >= seconds: return k * n / dt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=0.3, help="timing window per configuration and round")
    ap.add_argument("--n", type=int, default=512, help="observations per call")
    ap.add_argument("--batches", default="32,128,512")
    ap.add_argument("--threads", default=None, help="comma-separated torch thread counts (default: 1..cpu count)")
    args = ap.parse_args(argv)
    from rlexplain.agent_zoo import load_best_agent
    from rlexplain.compute import ComputeSettings, compute_settings
    pol, card = load_best_agent("ALE/Breakout-v5", "dqn", device="cpu")
    default_threads = TORCH_DEFAULT   # torch's own thread count (physical cores)
    base = copy.deepcopy(pol.module).to(memory_format=torch.contiguous_format).eval()
    nets = {"contiguous": base, "channels_last": copy.deepcopy(base).to(memory_format=torch.channels_last)}
    batches = [int(b) for b in args.batches.split(",")]
    threads = [int(t) for t in args.threads.split(",")] if args.threads else list(range(1, default_threads + 1))
    print("machine:", machine())
    print(f"network: {card['id']} obs {tuple(pol.obs_shape)} -> {pol.n_actions} actions; {args.n} observations per call")
    x = torch.rand(args.n, *pol.obs_shape)   # (N, C, H, W) contiguous, as environments and callers hand them over
    fmt = {"contiguous": torch.contiguous_format, "channels_last": torch.channels_last}

    def raw(t, lay, b):
        def fn():   # the channels-last rows include the copy into that layout, as Policy.forward pays it
            torch.set_num_threads(t)
            with torch.no_grad():
                for i in range(0, len(x), b): nets[lay](x[i:i + b].contiguous(memory_format=fmt[lay]))
        return fn
    t0 = time.perf_counter(); chosen = compute_settings(pol, refresh=True); cal = time.perf_counter() - t0
    new = copy.deepcopy(pol).apply_settings(chosen)
    old = copy.deepcopy(pol).apply_settings(ComputeSettings(default_threads, 1, "channels_last", 1024, "before"))
    def outputs(p, t):
        def fn():
            torch.set_num_threads(t); p.outputs(x)
        return fn
    batches = sorted(set(batches) | {chosen.batch_size})
    configs = {(f"{t}", lay, f"{b}", "raw forward"): raw(t, lay, b) for t in threads for lay in nets for b in batches}
    one = copy.deepcopy(pol).apply_settings(ComputeSettings(chosen.threads, 1, chosen.layout, chosen.batch_size, "one worker"))
    configs[(f"{chosen.threads}x1 worker", chosen.layout, f"{chosen.batch_size}", "Policy.outputs, one worker (validation overhead)")] = outputs(one, chosen.threads)
    configs[(f"{default_threads}", "channels_last", "1024", "Policy.outputs before (torch default threads)")] = outputs(old, default_threads)
    configs[(f"{chosen.threads}x{chosen.workers} workers", chosen.layout, f"{chosen.batch_size}", "Policy.outputs now (compute_settings)")] = outputs(new, chosen.threads)
    print(f"compute_settings: {chosen} (calibration took {cal:.2f} s)")
    print(f"load average before: {os.getloadavg()}")
    res = {c: [] for c in configs}
    for _ in range(args.rounds):
        for c, fn in configs.items(): res[c].append(rate(fn, len(x), args.seconds))
    torch.set_num_threads(chosen.threads)
    print(f"load average after: {os.getloadavg()}")
    print(f"{'threads':>14} {'layout':>13} {'batch':>5} {'img/s (median)':>14} {'min':>7} {'max':>7}  what")
    for c, v in res.items():
        print(f"{c[0]:>14} {c[1]:>13} {c[2]:>5} {statistics.median(v):>14.0f} {min(v):>7.0f} {max(v):>7.0f}  {c[3]}")
    best = max(res, key=lambda c: statistics.median(res[c]))
    print(f"best: {best[3]} threads={best[0]} layout={best[1]} batch={best[2]} ({statistics.median(res[best]):.0f} img/s)")


if __name__ == "__main__":
    main()
