"The shipped demo zoo: every entry loads, and every pipeline's last checkpoint beats a random policy clearly."
import numpy as np
import pytest

from rlexplain.agents import DEMO_ZOO, list_zoo, load_agent
from rlexplain.core import load_json


@pytest.fixture(scope="module")
def zoo():
    z = list_zoo()
    if z.empty:
        pytest.fail("the demo zoo (rlexplain/zoo) is empty: train it with `rlexplain zoo train --spec demo`")
    return z


def test_demo_zoo_is_complete(zoo):
    z = zoo[zoo.env_id == DEMO_ZOO["env_id"]]
    for pipe in DEMO_ZOO["pipelines"]:
        for frames in DEMO_ZOO["checkpoints"][pipe]:
            seeds = sorted(z[(z.pipeline == pipe) & (z.frames == frames)].seed)
            assert seeds == DEMO_ZOO["seeds"], (pipe, frames, seeds)


def test_entries_load_and_act(zoo):
    for path in zoo.path:
        pol = load_agent(path, device="cpu")
        card = load_json(f"{path}/card.json")
        obs = np.zeros((2, *card["observation_shape"]), np.uint8)
        assert pol.act(obs).shape == (2,)


def test_last_checkpoint_beats_random(zoo):
    z = zoo[zoo.env_id == DEMO_ZOO["env_id"]]
    for pipe in DEMO_ZOO["pipelines"]:
        last = z[(z.pipeline == pipe) & (z.frames == max(DEMO_ZOO["checkpoints"][pipe]))]
        assert last.return_mean.notna().all(), f"{pipe}: unevaluated entries"
        card = load_json(f"{last.path.iloc[0]}/card.json")
        assert card["evaluation"]["n_episodes"] >= 10
        # clear margin: the pipeline's mean return is at least 3x the random policy's and 2 points above it
        assert last.return_mean.mean() >= max(3 * last.random_mean.mean(), last.random_mean.mean() + 2), (pipe, last.return_mean.tolist())
