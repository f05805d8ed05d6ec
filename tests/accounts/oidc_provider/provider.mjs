// A real OpenID Connect provider for the single sign-on tests (tests/accounts/test_oidc.py): the certified
// oidc-provider package with one confidential client, PKCE required, RS256 ID tokens, and a sign-in form that
// takes a login name (no password) and consents for the client at once.
//
// Environment: OIDC_PORT (loopback port), OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI, OIDC_ACCOUNTS (a
// JSON file {login: {sub, claims}}, read at every lookup so that a test can change a person's claims between
// sign-ins). Prints "listening <issuer>" once it accepts connections.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

const port = Number(process.env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;

function accounts() {
  return JSON.parse(readFileSync(process.env.OIDC_ACCOUNTS, 'utf8'));
}

function accountBySub(sub) {
  return Object.values(accounts()).find((account) => account.sub === sub);
}

const signingKey = {
  ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
  kid: 'test-key-1', alg: 'RS256', use: 'sig',
};

const provider = new Provider(issuer, {
  clients: [{
    client_id: process.env.OIDC_CLIENT_ID,
    client_secret: process.env.OIDC_CLIENT_SECRET,
    redirect_uris: [process.env.OIDC_REDIRECT_URI],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
  }],
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  // a client that sends no code_challenge is refused: the gateway must do PKCE
  pkce: { required: () => true },
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['preferred_username', 'name'],
    groups: ['groups'],
  },
  features: { devInteractions: { enabled: false } },
  async findAccount(ctx, sub) {
    if (!accountBySub(sub)) return undefined;
    return {
      accountId: sub,
      async claims() {
        const account = accountBySub(sub);
        return { sub, ...account.claims };
      },
    };
  },
});

function escape(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

// GET /interaction/<uid>: the sign-in form; POST /interaction/<uid>/login: signs in as the named login and grants
// the client what it asked for.
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  if (req.method === 'GET') {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(`<!doctype html><title>Test provider sign-in</title>
<form method="post" action="/interaction/${escape(details.uid)}/login">
<input name="login" autofocus><button type="submit">Sign in</button></form>`);
    return;
  }
  const login = (await readForm(req)).get('login');
  const account = accounts()[login];
  if (!account) {
    await provider.interactionFinished(req, res, { error: 'access_denied', error_description: `no account ${login}` });
    return;
  }
  const grant = new provider.Grant({ accountId: account.sub, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { login: { accountId: account.sub }, consent: { grantId } }, { mergeWithLastSubmission: false });
}

const handle = provider.callback();
createServer((req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interaction(req, res).catch((error) => {
      res.statusCode = 400;
      res.end(String(error));
    });
    return;
  }
  handle(req, res);
}).listen(port, '127.0.0.1', () => console.log(`listening ${issuer}`));
