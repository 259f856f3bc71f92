"""The pages' jinja2 templates and static files (CSS, scripts) and the alert comment's template.

A folder of data, not code: this file makes it a package so that a wheel ships it as
torchbench.html_templates and an editable install maps that name here (pyproject's package-dir),
where torchbench/resources.py finds it with importlib.resources.
"""
