"""Importable helpers for the valgrind tests (callables must be importable in the worker)."""

import torch


def add_ones():
    torch.add(torch.ones(2), 1)


FAILING_DEFINITIONS = {
    "ok": {"add": __import__("torchbench_core.grouped", fromlist=["GroupedStmts"]).GroupedStmts(
        py_stmt="y = x + 1", setup=__import__("torchbench_core.grouped", fromlist=["GroupedSetup"]).GroupedSetup(
            py_setup="x = torch.ones(4)"))},
    "broken": __import__("torchbench_core.grouped", fromlist=["TimerArgs"]).TimerArgs("undefined_name + 1"),
}


def log_call(path, word="call"):
    """Appends `word` to the file at `path`: the calls a valgrind process made, read back by the test."""
    with open(path, "a") as f:
        f.write(word + "\n")


def log_pid(path):
    """Appends the calling process's id to the file at `path`: which valgrind process made each call."""
    import os

    with open(path, "a") as f:
        f.write(f"{os.getpid()}\n")
