"""Learning curves of float32 against `precision="bf16-update"` on the same seeds: Toybox Breakout, the IR study's DQN
(ALL preset) with the compact CNN, trained by `rlexplain.agents.train_agent` into a throwaway zoo, each checkpoint
evaluated greedily (`rlexplain.agent_zoo.evaluate_entry`). Prints return per checkpoint, precision and seed, with the
machine and load. bf16-update stays opt-in until such curves (many seeds, 1e6+ frames) agree; a short run is a smoke run,
not a learning-curve validation.

    python bench/bf16_learning_curves.py [--seeds 0,1] [--checkpoints 200000,400000,600000] [--episodes 10] [--root DIR]
"""
import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0,1"); ap.add_argument("--checkpoints", default="200000,400000,600000", help="frames")
    ap.add_argument("--episodes", type=int, default=10); ap.add_argument("--pipeline", default="dqn")
    ap.add_argument("--root", default=None, help="zoo folder for the runs (default: a temporary one)")
    a = ap.parse_args(argv)
    from rlexplain.agents import TrainJob, train_agent, load_card
    from rlexplain.agent_zoo import evaluate_entry
    print("machine:", machine())
    root = a.root or tempfile.mkdtemp(prefix="bf16-curves-")
    ck = tuple(int(c) for c in a.checkpoints.split(","))
    print("| precision | seed | frames | greedy return mean | wall s |\n|---|---|---|---|---|")
    for seed in (int(s) for s in a.seeds.split(",")):
        for prec in ("fp32", "bf16-update"):
            job = TrainJob(a.pipeline, "toybox/Breakout", seed, ck, root=str(Path(root) / prec), features="compact",
                           env_kwargs=(("fire_on_life_loss", True),), precision=prec)
            for d in train_agent(job):
                card = load_card(d); ev = evaluate_entry(d, n_episodes=a.episodes)
                r = f"{ev['mean']:.2f} (random {ev['random_mean']:.2f})"
                print(f"| {prec} | {seed} | {card['frames']} | {r} | {card['wall_clock_s']} |", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
