import ctypes
import time

import slowlib  # installed by asv, per commit

from benchmarks._harness import measure, timer  # the project's harness (see __init__)


class Work:
    params = (["slowlib"], ["work(200)"], ["sum of a range"], [1])
    param_names = ["label", "sub_label", "description", "num_threads"]
    unit = "seconds"
    version = "1"

    def track_work(self, label, sub_label, description, num_threads):
        return measure(timer("slowlib.work(200)", globals={"slowlib": slowlib}, label=label, sub_label=sub_label,
                             description=description, num_threads=num_threads), min_run_time=0.1)


def track_crashes():
    ctypes.string_at(0)  # segfault: this benchmark fails alone


def track_hangs():
    time.sleep(600)


track_hangs.timeout = 5
