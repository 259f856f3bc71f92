"""publish: the static site of a history, as an asv publisher plugin (publisher.py) beside asv's own pages.

pages.py (page content as data: Compare tables across environments, series) -> charts.py (chart geometry)
-> publisher.py (rendering html_templates/, the steps page of steps_page.py, offline assets of
assets.py, what a publish keeps for the next in page_cache.py); site.py runs `asv publish`.
"""
