"Shared fixtures: the test data in ../shared (skipped when absent) and a quiet matplotlib backend."
import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
os.environ.setdefault("RLEXPLAIN_SCALE", "demo")

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def shared_agents() -> Path:
    "The folder of agents trained by others (RL-Zoo, XRL-Bench); skip the test when it is absent."
    p = SHARED / "agents"
    if not p.exists():
        pytest.skip("../shared/agents is absent (test data, not a dependency)")
    return p
