"""Reading a project without touching a database, then describing its queries.

- `discovery`: which files make a project (mcpgen.yaml, spec files, Python tool files)
- `specs`: what loading gives, `LoadedSpec` and `LoadedProject`
- `project`: `load_project` and `load_spec`: mcpgen.yaml and its checks, each spec read and checked
- `checked`: each spec file as checked, kept between runs (in `cachefile`'s file)
- `tools`: which spec file defines which tool, kept between runs, so that `call` reads one spec file
- `spec_checks`: the static checks of one spec beyond its schema
- `messages`: pydantic's errors as one sentence each, at file:line:col, and `read_mapping`, the one reader of a spec or prompt file
- `columns`: describing a spec's query on its engine and checking every column the spec names
"""
