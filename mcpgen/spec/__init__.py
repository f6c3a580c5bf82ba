"""What analysts write, as models: spec files and `mcpgen.yaml`, read from YAML with line numbers.

- `models`: a spec file (parameters, SQL, sources, templates, table and charts)
- `config`: `mcpgen.yaml` (connections, defaults, HTTP, auth, audit, telemetry)
- `yamlload`: safe YAML 1.2 with line numbers, duplicate-key and alias checks
- `schema`: the JSON Schema of both, for editors
- `patterns`: parameter `pattern`s on RE2
- `params`: a tool's input schema from its parameters, and checking arguments against it
"""
