"""Occlusion's forward passes on one Breakout state (patch 2, black: 42 x 42 = 1764 occluded images) at one torch thread,
one worker: the plain batched forward and the exact incremental evaluation (`_incremental_outputs`), under inference
settings: no_grad vs inference_mode, contiguous vs channels_last, a frozen TorchScript trace (`torch.jit.freeze` +
`optimize_for_inference`), mkldnn tensors (`torch.utils.mkldnn.to_mkldnn`), and batch sizes. Printed (never asserted)
with the machine, its load before and after, and the settings; medians over interleaved rounds; `max|d|/max|v|` compares each
condition's outputs with the plain contiguous no_grad ones.

    python bench/occlusion_settings.py [--rounds 5] [--busy]
"""
import argparse
import copy
import os
import statistics
import sys
import time
import warnings

import numpy as np
import torch

from _common import busy, machine, rotated


def conditions(pol, x):
    from rlexplain.attribution._utils import patch_masks, perturb
    from rlexplain.attribution.explainers import perturbation as P
    C, H, W = x.shape
    masks = patch_masks(H, W, 2)
    n = len(masks)
    M = pol.module
    def plain(module, bs, fmt=torch.contiguous_format, ctx=torch.no_grad, conv=lambda t: t, back=lambda t: t):
        def run():
            out = []
            with ctx():
                for i in range(0, n, bs):
                    out.append(back(module(conv(perturb(x, masks, i, min(n, i + bs), value=0.0).contiguous(memory_format=fmt)))))
            return torch.cat(out)
        return run
    conds = {}
    for bs in (64, 256, 512):
        conds[f"plain no_grad contiguous b{bs}"] = plain(M, bs)
    conds["plain inference_mode contiguous b256"] = plain(M, 256, ctx=torch.inference_mode)
    cl = copy.deepcopy(M).to(memory_format=torch.channels_last)
    conds["plain no_grad channels_last b256"] = plain(cl, 256, fmt=torch.channels_last)
    try:
        with torch.no_grad():
            tr = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(copy.deepcopy(M).eval(), x[None].expand(256, -1, -1, -1).contiguous())))
        conds["plain jit.freeze+optimize_for_inference b256"] = plain(tr, 256)
    except Exception as e: print(f"jit: not run ({type(e).__name__}: {str(e)[:120]})")
    try:
        from torch.utils import mkldnn as mk
        net = P._conv_chain(pol)
        seq = torch.nn.Sequential(*[m for c, r in net.convs for m in ([c, torch.nn.ReLU()] if r else [c])])
        mseq = mk.to_mkldnn(copy.deepcopy(seq))
        def mkl():
            out = []
            with torch.no_grad():
                for i in range(0, n, 256):
                    f = mseq(perturb(x, masks, i, min(n, i + 256), value=0.0).to_mkldnn()).to_dense().flatten(1)
                    out.append(net.head(net.linear(f)))
            return torch.cat(out)
        conds["plain mkldnn tensors (convs) b256"] = mkl
    except Exception as e: print(f"mkldnn: not run ({type(e).__name__}: {str(e)[:120]})")
    net = P._conv_chain(pol)
    rects = P._patch_rects(H, W, 2)
    plan = P._occlusion_groups(net, rects, H, W)
    by_size = P._occlusion_groups(net, rects, H, W, by_size=True)
    for bs in (256, 512, 1024, 2048):
        conds[f"incremental no_grad b{bs}"] = lambda bs=bs: P._incremental_outputs(net, plan, x, 0.0, bs, 1)
    conds["incremental grouped by window size b1024"] = lambda: P._incremental_outputs(net, by_size, x, 0.0, 1024, 1)
    def inc_im():
        with torch.inference_mode(): return P._incremental_outputs(net, plan, x, 0.0, 1024, 1)
    conds["incremental inference_mode b1024"] = inc_im
    cl_pol = copy.copy(pol); cl_pol.module = cl
    ncl = P._conv_chain(cl_pol)
    conds["incremental channels_last weights b1024"] = lambda: P._incremental_outputs(ncl, plan, x, 0.0, 1024, 1)
    conds["incremental plan + outputs b1024"] = lambda: P._incremental_outputs(net, P._occlusion_groups(net, rects, H, W), x, 0.0, 1024, 1)
    return conds, n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--busy", action="store_true", help="one busy process beside the run")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    with busy(args.busy): run(args)


def run(args):
    sys.path.insert(0, os.path.dirname(__file__))
    from peers import rollout_states
    from rlexplain.agent_zoo import load_best_agent
    la0 = os.getloadavg()
    print("machine:", machine(), "| busy process:", "yes" if args.busy else "no")
    print(f"load average before: {la0[0]:.2f} {la0[1]:.2f} {la0[2]:.2f}")
    print("settings: " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()) + " | 1 torch thread, 1 worker, patch 2, black")
    pol, card = load_best_agent("ALE/Breakout-v5", "dqn", device="cpu")
    x, _ = rollout_states(pol, card, 1, 0, seed=3)
    x = torch.as_tensor(x[0])
    print(f"agent: {card['id']}, one state of a seeded rollout (seed 3)")
    conds, n = conditions(pol, x)
    out = {k: f() for k, f in conds.items()}   # warm-up, and the values
    ref = out[next(iter(conds))]               # the first condition's (plain contiguous no_grad) outputs
    times = {k: [] for k in conds}
    cpu = {k: [] for k in conds}   # thread CPU seconds: less sensitive than wall time to other processes on a shared machine
    for r in range(args.rounds):
        for k in rotated(conds, r):
            c0, t0 = time.thread_time(), time.perf_counter(); conds[k](); times[k].append(time.perf_counter() - t0); cpu[k].append(time.thread_time() - c0)
        print(f"round {r + 1}/{args.rounds} done (load {os.getloadavg()[0]:.2f})", flush=True)
    la1 = os.getloadavg()
    base = statistics.median(times[list(conds)[0]])
    print(f"\nmedian ms per state ({n} occluded images, wall and thread CPU) over {args.rounds} interleaved rounds; speed-up vs the first row")
    cbase = statistics.median(cpu[list(conds)[0]])
    print(f"{'condition':<48}{'wall ms':>9}{'x':>7}{'CPU ms':>9}{'x':>7}  {'max|d|/max|v|':>13}")
    for k in conds:
        m, c = statistics.median(times[k]) * 1000, statistics.median(cpu[k]) * 1000
        d = float((out[k] - ref).abs().max() / ref.abs().max())
        print(f"{k:<48}{m:>9.1f}{base * 1000 / m:>7.2f}{c:>9.1f}{cbase * 1000 / c:>7.2f}  {d:>13.1e}")
    print(f"\nload average after: {la1[0]:.2f} {la1[1]:.2f} {la1[2]:.2f}")


if __name__ == "__main__":
    main()
