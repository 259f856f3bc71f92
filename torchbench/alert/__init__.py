"""`torchbench alert`: pull-request regression alerts that can be trusted on a noisy machine.

pull_request.py measures and decides (through torchbench.ab) -> evidence_site.py writes the evidence
pages and flame graphs -> comment.py renders the Markdown comment, the JSON and the exit status;
github.py posts the comment from the workflow. Nothing outside this package imports it.
"""
