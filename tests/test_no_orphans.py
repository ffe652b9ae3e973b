"""Issue 54.3: stopping a run the usual way leaves no worker running. `kill PID` (SIGTERM) or SIGKILL to the parent of a
`--workers 2` run used to orphan both spawned workers (re-parented to PID 1, about 700 MB each, until killed by hand).
A real parent with a real `process_pool(2)` is killed here, and its workers are looked up by process id afterwards."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")

PARENT = textwrap.dedent("""
    import sys, time
    from concurrent.futures import wait
    from rlexplain.compute import process_pool, terminate_on_sigterm
    if __name__ == "__main__":
        try:
            with terminate_on_sigterm():
                pool = process_pool(2)
                futs = [pool.submit(time.sleep, 120) for _ in range(2)]
                while len(pool._processes) < 2: time.sleep(0.05)
                time.sleep(1.0)   # the workers have run their initializer (the watchdog starts there)
                print(" ".join(str(p) for p in pool._processes), flush=True)
                wait(futs)
        except KeyboardInterrupt:
            print("interrupted", flush=True); sys.exit(130)
""")


def _alive(pid: int) -> bool:
    "Whether process `pid` exists and is not a zombie (an exited child that PID 1 of a container may never reap)."
    try: state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError): return False
    return state not in ("Z", "X")


def _start(tmp_path):
    script = tmp_path / "parent.py"; script.write_text(PARENT)
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    line = p.stdout.readline()
    if not line.strip(): pytest.fail(f"the parent printed no worker pids: {p.stderr.read()[-2000:]}")
    pids = [int(x) for x in line.split()]
    assert len(pids) == 2 and all(_alive(x) for x in pids)
    return p, pids


def _gone(pids, limit: float = 30.0) -> list[int]:
    "The pids still alive after waiting for them to end (at most `limit` seconds: an event awaited, not a duration measured)."
    t0 = time.monotonic()
    while any(_alive(x) for x in pids) and time.monotonic() - t0 < limit: time.sleep(0.2)
    left = [x for x in pids if _alive(x)]
    for x in left:   # never leave them behind, even when the test fails
        try: os.kill(x, signal.SIGKILL)
        except ProcessLookupError: pass
    return left


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_killing_the_parent_leaves_no_worker_alive(tmp_path, sig):
    p, pids = _start(tmp_path)
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    assert _gone(pids) == [], f"workers {pids} outlived their parent (killed with {sig.name})"
    if sig == signal.SIGTERM:   # handled as Ctrl-C: the caller's one interrupted line, not a traceback
        assert p.returncode == 130 and "interrupted" in out and "Traceback" not in err, (p.returncode, out, err[-2000:])
