"Shared fixtures: the test data in ../shared (skipped when absent) and a quiet matplotlib backend."
import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
os.environ.setdefault("RLEXPLAIN_SCALE", "demo")

# Property tests draw the same examples on every run (CI included): a failure is reproducible, never a coin flip.
# Explore new examples locally with HYPOTHESIS_PROFILE=explore; pin what they find as a regression test.
from hypothesis import settings as _hyp_settings
_hyp_settings.register_profile("ci", derandomize=True, database=None)
_hyp_settings.register_profile("explore", derandomize=False)
_hyp_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def shared_agents() -> Path:
    "The folder of agents trained by others (RL-Zoo, XRL-Bench); skip the test when it is absent."
    p = SHARED / "agents"
    if not p.exists():
        pytest.skip("../shared/agents is absent (test data, not a dependency)")
    return p
