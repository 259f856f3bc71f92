import json

import git

from torchbench import history

COMPARE = """
Benchmarks that have stayed the same:

| Change   | Before [94d482a4] <master~1>   | After [4544a8ef] <master>   | Ratio   | Benchmark (Parameter)       |
|----------|--------------------------------|-----------------------------|---------|-----------------------------|
|          | failed                         | failed                      | n/a     | bench_slowlib.track_crashes |
|          | 1.00±0.2μs                     | 1.20±0.3μs                  | ~1.20   | bench.noisy                 |

Benchmarks that have got worse:

| Change   | Before [94d482a4] <master~1>   | After [4544a8ef] <master>   |   Ratio | Benchmark (Parameter)                  |
|----------|--------------------------------|-----------------------------|---------|----------------------------------------|
| +        | 1.18±0μs                       | 5.22±0.01μs                 |    4.44 | bench_slowlib.Work.track_work('a', 1)  |
| -        | 5.00±0μs                       | 1.00±0μs                    |    0.20 | bench.faster                           |
"""


def test_regressions_are_the_significant_slowdowns_only():
    """asv compare exits 0 whatever it finds; the table is the only signal.
    A change above the factor that is not significant has no mark and '~' on its ratio."""
    (row,) = history.regressions(COMPARE)
    assert "track_work" in row


def test_config_points_asv_at_the_repository_and_output(tmp_path):
    repo = tmp_path / "lib"
    repo.mkdir()
    (repo / "pyproject.toml").write_text('[project]\nname = "mylib"\nversion = "1"\n')
    conf_path = history.write_config(repo, tmp_path / "out", tmp_path / "suite")
    conf = json.loads(conf_path.read_text())
    assert conf["project"] == "mylib" and conf["repo"] == str(repo)
    assert conf["results_dir"] == str(tmp_path / "out" / "results")
    assert conf["benchmark_dir"] == str(tmp_path / "suite")
    assert conf["matrix"]["req"]["torch"] == "2.13.0"  # pinned: never the CUDA build
    assert "--no-deps" in conf["install_command"][0] and "--no-deps" in conf["build_command"][0]
    assert conf["launch_method"] == "forkserver"


def test_recent_commits_are_oldest_first(tmp_path):
    repo = git.Repo.init(tmp_path)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    made = []
    for i in range(4):
        (tmp_path / "f").write_text(str(i))
        repo.index.add(["f"])
        made.append(repo.index.commit(f"c{i}").hexsha)
    assert history.recent_commits(tmp_path, 3) == made[1:]
    assert history.recent_commits(tmp_path, 10) == made
    assert history.project_name(tmp_path) == tmp_path.name  # no pyproject: the folder name
