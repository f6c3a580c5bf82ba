"""Prose, force text and source URLs: Jinja2 in an immutable sandbox, every value bounded.

- `render`: the sandboxed environments and `Template` (compile once, render per call)
- `fast`: the plain-Python renderer for the common template shapes (the answer is always Jinja's)
- `filters`: the filters mcpgen adds (`thousands`, `round`, `percent`, `date`, `join_names`)
- `budget`: what a template may build (sizes of every string and list) and the clock it runs on
"""
