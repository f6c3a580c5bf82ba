// A real OpenID provider for the auth tests: the `oidc-provider` package on loopback.
//
//   node tests/oidc-provider/provider.mjs CONFIG.json
//
// CONFIG.json: {"modules": node_modules folder holding oidc-provider, "port": 1-65535, "keys": [private JWKs], "users": {"alice": {...claims}},
//               "clients": [{client_id, client_secret, grant_types, redirect_uris?, ttl?}]}
// It issues JWT access tokens for any `resource` a client asks for (the audience), with the
// user's claims added, and prints "ready <issuer>" on stdout once it listens.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
// Installed into an ignored folder at test time, so imported by path (ES modules ignore NODE_PATH).
const entry = path.join(config.modules, 'oidc-provider', 'lib', 'index.js');
const { default: Provider } = await import(pathToFileURL(entry).href);
const issuer = `http://127.0.0.1:${config.port}`;
const SCOPES = 'mcp:read reports';
const ttls = Object.fromEntries(config.clients.map((c) => [c.client_id, c.ttl ?? 300]));

const provider = new Provider(issuer, {
  clients: config.clients.map(({ ttl, ...client }) => ({
    redirect_uris: [],
    response_types: [],
    scope: `openid email ${SCOPES}`,
    ...client,
  })),
  jwks: { keys: config.keys },
  scopes: ['openid', 'email', ...SCOPES.split(' ')],
  claims: { email: ['email'] },
  features: {
    clientCredentials: { enabled: true },
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource, client) => ({
        scope: SCOPES,
        audience: resource,
        accessTokenTTL: ttls[client.clientId],
        accessTokenFormat: 'jwt',
      }),
    },
  },
  async findAccount(ctx, id) {
    if (!config.users[id]) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, ...config.users[id] }) };
  },
  async extraTokenClaims(ctx, token) {
    return token.accountId ? config.users[token.accountId] : undefined;
  },
});

provider.listen(config.port, '127.0.0.1', () => {
  process.stdout.write(`ready ${issuer}\n`);
});
