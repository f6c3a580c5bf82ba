"""Static checks beyond the spec schema, used by `load` and the engines (no project database is touched).

One module per concern:

- `templates`: constructs the template sandbox refuses or that would blow its limits
- `filters`: filters and tests that do not exist, and filter keywords they do not take
- `row_references`: the result columns a template reads
- `charts`: chart settings that make no sense for the chart's type
- `sql_paths`: SQL that names files outside the project folder, or lets the caller choose a file
- `duckdb_functions`: the DuckDB functions a query may call, decided from DuckDB's catalogue
- `init_statements`: DuckDB `init:` statements that would widen what a connection reaches
- `urls`: `sources:` entries that are not absolute http(s) URLs with a literal host
- `passwords`: literal passwords in `mcpgen.yaml`
"""

from .charts import CHART_JS_OPTIONS, chart_sense
from .duckdb_functions import (
    HARMLESS_SIDE_EFFECTS,
    TABLE_FUNCTIONS,
    Catalogue,
    catalogue_of,
    default_catalogue,
    function_problems,
)
from .filters import filter_problems
from .init_statements import init_problem
from .passwords import literal_password
from .row_references import row_references
from .sql_paths import caller_paths, outside_paths, reads_files
from .templates import template_hazards
from .urls import source_problem

__all__ = [
    "CHART_JS_OPTIONS",
    "HARMLESS_SIDE_EFFECTS",
    "TABLE_FUNCTIONS",
    "Catalogue",
    "caller_paths",
    "catalogue_of",
    "chart_sense",
    "default_catalogue",
    "filter_problems",
    "function_problems",
    "init_problem",
    "literal_password",
    "outside_paths",
    "reads_files",
    "row_references",
    "source_problem",
    "template_hazards",
]
