"""Reading a spec's SQL with sqlglot's tokenizer and syntax tree; nothing here touches a database.

- `statements`: `:name` placeholders, the one-read-only-statement check, the shared tokenizer
- `transpile`: a spec's SQL translated to its connection's dialect, once at load
- `nulls`: spelled-out NULL orders dropped on NOT NULL columns, so an index can give the order
- `pages`: the SQL of one page of a paged spec, and the load-time checks it needs
- `places`: where a database's error points, found in the spec's SQL as written
"""
