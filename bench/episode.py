"""One episode explained by occlusion at the paper's parameters (issue 40.4): the zoo's Breakout agent (`episode_agent`) plays a
seeded episode of up to --steps agent steps (4 frames each; when the episode ends first, the next seed's episode continues it, so that --steps agent
steps are explained: the zoo agents' Breakout episodes last 480-920 steps), every --every-th step is explained by occlusion with
`PAPER_PARAMS["occlusion"]` (Huber et al. 2022, C.2: 2x2 black patch, raw outputs; the episode's `score="diff"` costs the
same), then the movie (MP4 + GIF + HTML player) is rendered. Prints the machine line (CPU, cores, torch threads, 1-minute
load), the settings, the load before and after, and the seconds of each phase. Printed, never asserted.

    python bench/episode.py [--steps 1000] [--every 1] [--patch 2] [--threads N] [--no-movie] [--busy]

The package's own settings by default (one torch thread, `Policy.settings`' worker threads), as every lesson runs.
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

from _common import busy, machine


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="ALE/Breakout-v5")
    p.add_argument("--steps", type=int, default=1000, help="agent steps to explain (episodes of seeds --seed, --seed + 1, ... back to back)")
    p.add_argument("--every", type=int, default=1, help="explain every k-th step")
    p.add_argument("--patch", type=int, default=None, help="occlusion patch (default: the paper's, PAPER_PARAMS)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: the package's rule, compute.torch_threads; "
                                                                 "its forward passes then run on the policy's calibrated worker threads)")
    p.add_argument("--no-movie", action="store_true", help="time the explanation only")
    p.add_argument("--busy", action="store_true", help="one process spinning on a core beside the run")
    a = p.parse_args(argv)
    from rlexplain.compute import torch_threads
    torch_threads(a.threads)   # the package's own setter (a Policy would otherwise set its default, 1 thread)
    from rlexplain.attribution import PAPER_PARAMS
    from rlexplain.episode import EPISODE_PARAMS, episode_agent, explain_episode, write_movie
    params = {**EPISODE_PARAMS["occlusion"], **({"patch": a.patch} if a.patch else {})}
    print(machine())
    pol, card = episode_agent(a.env)
    env_kwargs = card.get("env_kwargs") or {}
    print(f"agent {card['id']} | env {a.env}, seed {a.seed}, up to {a.steps} agent steps, every {a.every} | occlusion {params} "
          f"(paper: {PAPER_PARAMS['occlusion'][1]}) | torch threads {torch.get_num_threads()}, policy settings {pol.settings}")
    with busy(a.busy):
        load0 = os.getloadavg()[0]
        t0, eps, seed = time.perf_counter(), [], a.seed
        while sum(e.episode_length for e in eps) < a.steps:   # an episode ends before --steps: the next seed's episode continues
            left = a.steps - sum(e.episode_length for e in eps)
            eps.append(explain_episode(pol, a.env, "occlusion", every=a.every, max_steps=left, seed=seed, env_kwargs=env_kwargs,
                                       show_progress=True, **params))
            seed += 1
        total = time.perf_counter() - t0
        n, occ = sum(len(e) for e in eps), sum(e.seconds for e in eps)
        parts = " + ".join(f"{e.episode_length} (seed {e.seed})" for e in eps)
        print(f"played {sum(e.episode_length for e in eps)} agent steps in {len(eps)} episode(s): {parts} (each but the last to its end); "
              f"explained {n} states")
        print(f"explain: {total:.1f} s in all ({1000 * total / n:.0f} ms a state), {occ:.1f} s in occlusion ({1000 * occ / n:.0f} ms a state), "
              f"{total - occ:.1f} s playing, forward passes and collecting")
        if not a.no_movie:
            with tempfile.TemporaryDirectory() as d:
                t1 = time.perf_counter(); mb = 0.0
                for i, ep in enumerate(eps):
                    files = write_movie(ep, Path(d) / f"e{i}.mp4", Path(d) / f"e{i}.gif", Path(d) / f"e{i}.html")
                    mb += sum(f.stat().st_size for f in files.values()) / 1e6
                mv = time.perf_counter() - t1
            print(f"movie (MP4 + GIF + HTML): {mv:.1f} s ({1000 * mv / n:.0f} ms a frame), {mb:.1f} MB in all")
        print(f"load average (1 min): {load0:.2f} before, {os.getloadavg()[0]:.2f} after{' (with one busy process)' if a.busy else ''}")


if __name__ == "__main__":
    sys.exit(main())
