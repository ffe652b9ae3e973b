"""The quality gate (`rlexplain.agents.quality_gate`): a constant network fails it, a trained agent passes it, and the
agents that the lessons, the demo and the reference scale use pass it."""
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from rlexplain.agents import ZOO_DIR, best_zoo_entry, gate_verdict, list_zoo, load_card, quality_gate

CARTPOLE = ZOO_DIR / "cartpole-v1" / "dqn-mlp" / "seed0" / "0000060000"


def _copy(tmp_path, zero_head: bool):
    "A copy of the zoo's CartPole DQN as a one-entry zoo; with `zero_head` its last layer is 0: the same q-values everywhere."
    root = tmp_path / "zoo"; d = root / "cartpole-v1" / "dqn-mlp" / "seed0" / "0000060000"
    shutil.copytree(CARTPOLE, d)
    card = load_card(d); card.pop("gate", None)
    import json; (d / "card.json").write_text(json.dumps(card))
    if zero_head:
        sd = load_file(str(d / "weights.safetensors"))
        last = sorted(k for k in sd if k.startswith("q_net.") and k.endswith(".weight"))[-1]   # the output layer
        for k in (last, last.replace(".weight", ".bias")): sd[k] = torch.zeros_like(sd[k])
        save_file(sd, str(d / "weights.safetensors"))
    return root, d


def test_constant_network_fails_the_gate(tmp_path):
    root, d = _copy(tmp_path, zero_head=True)
    g = quality_gate(d, n_episodes=30)
    assert g["modal_share"] == 1.0 and g["entropy_bits"] == 0.0 and g["distinct"] == 1
    assert g["q_range_mean"] == 0.0
    assert g["plays"] is False
    assert list_zoo(root).plays.tolist() == [False]
    with pytest.raises(LookupError, match="passes the quality gate"): best_zoo_entry("CartPole-v1", root=root, plays=True)


def test_trained_agent_passes_the_gate_and_is_stored(tmp_path):
    root, d = _copy(tmp_path, zero_head=False)
    g = quality_gate(d, n_episodes=30)
    assert g["n"] == 30 and g["low"] > 0 and g["modal_share"] <= 0.95 and g["plays"] is True
    assert load_card(d)["gate"]["plays"] is True                      # recorded in the card
    assert quality_gate(d, n_episodes=30) == load_card(d)["gate"]     # a stored gate of the same protocol is reused
    assert best_zoo_entry("cartpole-v1", root=root, plays=True) == str(d)


@pytest.mark.parametrize("low,share,plays", [(0.1, 0.5, True), (0.0, 0.5, False), (-1, 0.5, False), (1, 0.951, False), (1, 0.95, True)])
def test_gate_verdict(low, share, plays):
    assert gate_verdict(low, share) is plays
