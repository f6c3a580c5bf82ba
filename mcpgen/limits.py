"""The size limits, in one place: files read, request bodies, what a template may build, log lines and cursors.

>>> MAX_FILE_BYTES // 1024, MAX_SEQUENCE
(1024, 100000)
"""

MAX_FILE_BYTES = 1024 * 1024  # a spec or mcpgen.yaml file
MAX_BODY_BYTES = 1024 * 1024  # an HTTP request body (preview, and serve --http by default)
MAX_OUTPUT = 100_000  # characters a template may produce, and in any one string it builds
MAX_SEQUENCE = 100_000  # items in any one list or tuple a template builds
MAX_BUILT = 2_000_000  # characters and items one render may build in all
MAX_POWER = 10_000  # the largest exponent of ** inside a template
MAX_INT_BITS = 100_000  # the largest integer a template may build
MAX_RANGE = 100_000  # items range() may produce (jinja2.sandbox.MAX_RANGE)
MAX_LOG_LINE = 16 * 1024  # bytes of UTF-8 in one log line (call, audit or any other), arguments included
MAX_LOGGED_VALUE = 1024  # bytes of JSON one argument may take in an audit line; a longer one is logged as its hash
MAX_CURSOR_KEY = 512  # bytes of JSON a cursor may carry of a row's sort key; past it the next page starts by OFFSET
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024  # a DuckDB database kept in the cache (each start reads it whole to check it)
