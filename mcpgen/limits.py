"""The size limits, in one place: files read, request bodies, and what a template may build.

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
