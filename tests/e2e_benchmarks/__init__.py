"""Suite for the asv end-to-end test: measures `slowlib` from the throwaway repository.

A suite outside this repository reaches the harness the same way ours does:
torchbench.history names the working tree in TORCHBENCH_HARNESS.
"""

import os
import sys

sys.path.insert(0, os.environ["TORCHBENCH_HARNESS"])
