"""The C++ API's own overhead beside Python's: a few ops as Python statements and as their C++ twins
(Timer(language="cpp")), wall time and instruction counts, one table row per op with a Python and a C++
column. What Python costs on top of the dispatcher shows as the gap between the two; a change in torch's C++
dispatch moves both."""

from torchbench_core.asv_suite import CountsSuite, TimerSpec, TimerSuite

CASES = {
    # op: (Python setup, Python stmt, C++ setup, C++ stmt)
    "add": ("x = torch.ones(1)", "torch.add(x, x)", "auto x = torch::ones({1});", "torch::add(x, x);"),
    "empty": ("pass", "torch.empty((1,))", "", "torch::empty({1});"),
    "view": ("x = torch.ones((4, 4))", "x.view(-1)", "auto x = torch::ones({4, 4});", "x.view({-1});"),
    "Linear forward": ("model = torch.nn.Linear(4, 4)\nx = torch.ones((2, 4))", "model(x)",
                       "auto model = torch::nn::Linear(4, 4);\nauto x = torch::ones({2, 4});",
                       "model->forward(x);"),
}

LABEL = "dispatch: Python and C++"


class PythonAndCpp(TimerSuite):
    timers = [spec for op, (py_setup, py_stmt, cpp_setup, cpp_stmt) in CASES.items() for spec in (
        TimerSpec(py_stmt, py_setup, label=LABEL, sub_label=op, description="Python"),
        TimerSpec(cpp_stmt, cpp_setup, label=LABEL, sub_label=op, description="C++", language="cpp"),
    )]


class PythonAndCppCounts(CountsSuite):
    of = PythonAndCpp
