import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# Every test runs the scheduler with its invariant checker on (kubesched._runtime.invariants):
# the simulators and live mode verify after each cycle that no placement over-commits a node,
# no pod is bound twice, the cache agrees with the cluster, every pending pod is accounted for and
# nominations are consistent. Set at import so that subprocesses (the CLI) inherit it too; a
# value already in the environment (e.g. "full", or "0" to measure without it) wins.
os.environ.setdefault("KUBESCHED_CHECK_INVARIANTS", "1")
