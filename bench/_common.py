"""What every bench script prints and does alike: the machine line, and an optional busy process beside the run."""
import contextlib
import multiprocessing as mp
import os
import platform
import time

import torch

TORCH_DEFAULT = torch.get_num_threads()   # torch's own thread count (physical cores), read on import, before a script changes it


def use(policy, threads: int, workers: int, layout: str, batch: int) -> None:
    "Run `policy` with exactly these compute settings: torch's thread count, worker threads, memory layout, batch size."
    from rlexplain.compute import ComputeSettings
    torch.set_num_threads(threads)
    policy.apply_settings(ComputeSettings(threads, workers, layout, batch, "override"))


def machine() -> str:
    "Host, CPU model, cores, torch version and threads, python and the 1-minute load average, on one line."
    try: cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    except OSError: cpu = platform.processor() or platform.machine()
    return (f"{platform.node()} | {cpu} | {os.cpu_count()} cores | torch {torch.__version__}, {torch.get_num_threads()} thread(s) | "
            f"python {platform.python_version()} | load {os.getloadavg()[0]:.2f}")


def rotated(conditions, r: int) -> list:
    "The conditions in round r's order: rotated by r, so none always follows the same one (torch's OpenMP threads keep spinning a while after a multi-threaded call)."
    c = list(conditions)
    return c[r % len(c):] + c[:r % len(c)]


def _spin():
    while True: pass


@contextlib.contextmanager
def busy(on: bool = True):
    "With `on`, one process spinning on a core for the duration (a shared laptop or CI box), started 2 s before."
    spin = mp.Process(target=_spin, daemon=True) if on else None
    if spin: spin.start(); time.sleep(2)
    try: yield
    finally:
        if spin: spin.terminate()
