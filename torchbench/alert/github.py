"""Post or update the alert's pull-request comment: the `workflow_run` half of the GitHub workflows.

    python -m torchbench.alert.github --comment alert/comment.md --pr-file alert/pr-number

Runs in the privileged `workflow_run` job, which never checks out or runs the
pull request's code: it reads the artifact the unprivileged `pull_request` job
uploaded (the comment and the pull request number) and the event that
triggered it (GITHUB_EVENT_PATH). The artifact is untrusted, so:

* the number must be a plain integer, and the pull request it names must
  have the head commit the triggering run measured (a fork cannot aim its
  comment at another pull request);
* the files must be small (the comment at most MAX_ARTIFACT bytes, read only
  after its size is checked; the number a few bytes) and UTF-8;
* the comment must start with the alert's hidden marker, and is cut to
  GitHub's size limit.

One comment per pull request: the one with the marker is edited, else one is
created. Only the standard library is used (the job installs nothing). The
API root is GITHUB_API_URL, as in every Actions job.

With --report (the artifact's report.json), a check run "torchbench verdict"
on the measured head commit says the outcome as GitHub shows it (issue 51):
a regression or a failure fails it, no regression passes it, and rows left
undecided make it *neutral* (grey, not green), its summary the suspects: the
undecided rows closest to significance, with their change and interval. The
report's outcome must be one of the four (`CONCLUSIONS`), else nothing is set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

__all__ = ["CONCLUSIONS", "MARKER", "check_run", "main", "post"]

MARKER = "torchbench-alert"  # the hidden <!-- marker --> by which the comment is found again

MAX_BODY = 65536  # GitHub's limit for a comment body
MAX_ARTIFACT = 1 << 20  # a comment file larger than this is not a torchbench comment
MAX_NUMBER = 32
# the report's outcome (comment.OUTCOMES) as a check run's conclusion: undecided is neutral, never green
CONCLUSIONS = {"regression": "failure", "failed": "failure", "undecided": "neutral", "no_regression": "success"}
CHECK_NAME = "torchbench verdict"
SUSPECTS_LISTED = 10
MAX_SUMMARY = 60000  # a check run's summary holds at most 65535 characters
TRUNCATED = "\n\n> (cut to fit GitHub's comment size limit; the whole report is in the workflow's artifact)\n"


class GitHubError(RuntimeError):
    pass


def _request(api: str, token: str, method: str, path: str, body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{api}{path}", data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as e:
        raise GitHubError(f"{method} {path}: HTTP {e.code} {e.read()[:300]!r}") from None


def post(*, api: str, token: str, repo: str, number: int, head_sha: str, body: str) -> str:
    """Create or update the marked comment on pull request `number`; returns 'created' or 'updated'."""
    pull = _request(api, token, "GET", f"/repos/{repo}/pulls/{number}")
    if pull.get("head", {}).get("sha") != head_sha:
        raise GitHubError(f"pull request #{number} is at {pull.get('head', {}).get('sha')}, not at the measured "
                          f"commit {head_sha}: refusing to comment")
    marker = f"<!-- {MARKER} -->"
    if not body.startswith(marker):
        raise GitHubError("the comment does not start with the alert's marker; is it a torchbench alert report?")
    if len(body) > MAX_BODY:
        body = body[: MAX_BODY - len(TRUNCATED)] + TRUNCATED
    page = 1
    while True:
        comments = _request(api, token, "GET", f"/repos/{repo}/issues/{number}/comments?per_page=100&page={page}")
        for comment in comments:
            if marker in (comment.get("body") or "") and comment.get("user", {}).get("type") == "Bot":
                _request(api, token, "PATCH", f"/repos/{repo}/issues/comments/{comment['id']}", {"body": body})
                return "updated"
        if len(comments) < 100:
            break
        page += 1
    _request(api, token, "POST", f"/repos/{repo}/issues/{number}/comments", {"body": body})
    return "created"


def _pct(x) -> str:
    return f"{x - 1:+.1%}" if isinstance(x, (int, float)) else "?"


def summary(report: dict) -> str:
    """The check run's summary: the verdict, then (undecided) the suspects, closest to significance first."""
    lines = [str(report.get("verdict", ""))[:500]]
    undecided = [r for r in report.get("rows", []) if isinstance(r, dict) and r.get("status") == "inconclusive"
                 and isinstance(r.get("comparison"), dict)]
    undecided.sort(key=lambda r: r["comparison"].get("p_value") if isinstance(r["comparison"].get("p_value"),
                                                                                (int, float)) else 1.0)
    if undecided:
        lines += ["", f"Undecided rows ({len(undecided)}), closest to significance first:"]
        for r in undecided[:SUSPECTS_LISTED]:
            c = r["comparison"]
            lines.append(f"- {str(r.get('title') or r.get('name'))[:200]}: {_pct(c.get('ratio'))} "
                         f"[{_pct(c.get('ci_low'))}, {_pct(c.get('ci_high'))}], p={c.get('p_value')}"
                         + (f" ({str(r.get('error'))[:200]})" if r.get("error") else ""))
        if len(undecided) > SUSPECTS_LISTED:
            lines.append(f"- and {len(undecided) - SUSPECTS_LISTED} more (see the comment)")
    return "\n".join(lines)[:MAX_SUMMARY]


def check_run(*, api: str, token: str, repo: str, head_sha: str, report: dict) -> str:
    """Set the check run that shows the outcome on the measured commit; returns its conclusion."""
    outcome = report.get("outcome")
    if outcome not in CONCLUSIONS:
        raise GitHubError(f"the report's outcome {str(outcome)[:40]!r} is none of {sorted(CONCLUSIONS)}")
    conclusion = CONCLUSIONS[outcome]
    _request(api, token, "POST", f"/repos/{repo}/check-runs", {
        "name": CHECK_NAME, "head_sha": head_sha, "status": "completed", "conclusion": conclusion,
        "output": {"title": str(report.get("verdict", outcome))[:200], "summary": summary(report)}})
    return conclusion


def _read_small(path: Path, limit: int) -> str:
    """An artifact file's text, refused unread when it is larger than LIMIT bytes or not UTF-8."""
    size = path.stat().st_size
    if size > limit:
        raise GitHubError(f"{path}: {size} bytes, more than the {limit} a torchbench artifact holds")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise GitHubError(f"{path}: not UTF-8 text") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchbench.alert.github", description=__doc__.splitlines()[0])
    parser.add_argument("--comment", type=Path, required=True, help="the Markdown comment (from the artifact)")
    parser.add_argument("--pr-file", type=Path, required=True, help="file holding the pull request number")
    parser.add_argument("--report", type=Path, default=None,
                        help="the report's JSON (from the artifact): set the outcome's check run as well")
    args = parser.parse_args(argv)
    try:
        event = json.loads(Path(os.environ["GITHUB_EVENT_PATH"]).read_text())
        run = event["workflow_run"]
        repo, head_sha = event["repository"]["full_name"], run["head_sha"]
        text = _read_small(args.pr_file, MAX_NUMBER).strip()
        if not text.isdigit():
            raise GitHubError(f"{args.pr_file}: not a pull request number: {text[:40]!r}")
        api = os.environ.get("GITHUB_API_URL", "https://api.github.com")
        outcome = post(api=api, token=os.environ["GITHUB_TOKEN"], repo=repo, number=int(text), head_sha=head_sha,
                       body=_read_small(args.comment, MAX_ARTIFACT))
        if args.report is not None:
            report = json.loads(_read_small(args.report, 16 * MAX_ARTIFACT))
            if not isinstance(report, dict):
                raise GitHubError(f"{args.report}: not a torchbench alert report")
            conclusion = check_run(api=api, token=os.environ["GITHUB_TOKEN"], repo=repo, head_sha=head_sha,
                                   report=report)
            print(f"torchbench comment: check run '{CHECK_NAME}' {conclusion}")
    except (KeyError, OSError, ValueError, GitHubError) as e:
        print(f"torchbench comment: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    print(f"torchbench comment: {outcome} the comment on #{int(text)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
