"""Peak memory where it says something: batched dot on a large input.

mul/sum materialises a (10000, 1024) product before reducing it, bmm does
not. asv's peakmem is the process's maximum RSS, torch's import included
(~0.3 GB), so the difference between the two is the signal.
"""

import torch

from .batched_dot import IMPLEMENTATIONS


class BatchedDotMemory:
    params = (["Batched dot"], ["[10000, 1024]"], list(IMPLEMENTATIONS), [1])
    param_names = ["label", "sub_label", "description", "num_threads"]
    version = "1"

    def setup(self, label, sub_label, description, num_threads):
        torch.set_num_threads(num_threads)
        self.x = torch.ones((10000, 1024))

    def peakmem_batched_dot(self, label, sub_label, description, num_threads):
        IMPLEMENTATIONS[description](self.x, self.x)
