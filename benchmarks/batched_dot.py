"""Seed 001: batched dot by mul/sum against bmm, over sizes and thread counts."""

import json

import torch

from torchbench_core.asv_suite import timer, track


def batched_dot_mul_sum(a, b):
    return a.mul(b).sum(-1)


def batched_dot_bmm(a, b):
    a = a.reshape(-1, 1, a.shape[-1])
    b = b.reshape(-1, a.shape[-1], 1)
    return torch.bmm(a, b).flatten()


IMPLEMENTATIONS = {"mul/sum": batched_dot_mul_sum, "bmm": batched_dot_bmm}


class BatchedDot:
    params = (["Batched dot"], ["[1, 64]", "[64, 1024]", "[1024, 64]", "[10000, 64]"], list(IMPLEMENTATIONS), [1, 2])
    param_names = ["label", "sub_label", "description", "num_threads"]
    unit = "seconds"
    version = "1"

    def track_batched_dot(self, label, sub_label, description, num_threads):
        b, n = json.loads(sub_label)
        x = torch.ones((b, n))
        return track(timer("batched_dot(x, x)", globals={"x": x, "batched_dot": IMPLEMENTATIONS[description]},
                             label=label, sub_label=sub_label, description=description, num_threads=num_threads))
