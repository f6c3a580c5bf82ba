"""`serve --http`: streamable HTTP, stateless, behind any number of load balancers.

- `options`: the HTTP options, the checks that refuse unsafe ones, accepted Host and Origin values
- `app`: the Starlette app (`/mcp`, `/healthz`, OAuth metadata) and `serve_http`
- `connections`: header and body timeouts and a connection cap, for slow and surplus clients
- `auth`: OAuth access tokens, JWTs checked against the issuer's keys
"""
