/**
 * A fake Google OAuth 2.0 token endpoint and GCE metadata server: a real `node:http` server on
 * 127.0.0.1, port 0, that checks what Google checks.
 *
 * - `POST /token` with `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`: the assertion's
 *   RS256 signature must verify with the public key of a service account the fake knows (looked up
 *   by `iss`), its `aud` must be the fake's own token URL (or `audience` when a test points a client
 *   with a fixed audience here), `exp` in the future and at most an hour after `iat`, `scope` given.
 *   Google's `{"error": "invalid_grant", "error_description": …}` otherwise.
 * - `POST /token` with `grant_type=refresh_token`: `client_id`, `client_secret` and `refresh_token`
 *   must be a user the fake knows.
 * - `GET /computeMetadata/v1/instance/service-accounts/default/token` with `Metadata-Flavor: Google`
 *   (403 without it), answered with the same header.
 *
 * It counts token requests (a test shows one refresh for many concurrent requests), can fail the
 * next requests with a status, and knows which access tokens it issued and when they expire
 * (`isIssued`, `revoke`) so a fake Vertex can check a bearer. Service-account keys are generated at
 * test time (`createServiceAccount`): no private key is kept in the repository.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync, randomBytes, verify } from 'node:crypto';

export interface TestServiceAccount {
  clientEmail: string;
  privateKeyId: string;
  privateKeyPem: string;
  publicKeyPem: string;
  /** The key file's JSON, as the Cloud console writes it, with `token_uri` set. */
  keyFile(tokenUri: string): Record<string, string>;
}

/** A service account with a fresh 2048-bit RSA key pair. */
export function createServiceAccount(clientEmail = 'llmux-test@llmux-project.iam.gserviceaccount.com'): TestServiceAccount {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privateKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const publicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const privateKeyId = randomBytes(20).toString('hex');
  return {
    clientEmail,
    privateKeyId,
    privateKeyPem,
    publicKeyPem,
    keyFile: (tokenUri) => ({
      type: 'service_account',
      project_id: 'llmux-project',
      private_key_id: privateKeyId,
      private_key: privateKeyPem,
      client_email: clientEmail,
      client_id: '100000000000000000001',
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: tokenUri,
      auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
      client_x509_cert_url: `https://www.googleapis.com/robot/v1/metadata/x509/${encodeURIComponent(clientEmail)}`,
      universe_domain: 'googleapis.com',
    }),
  };
}

export interface TestAuthorizedUser { client_id: string; client_secret: string; refresh_token: string }

export interface SeenAssertion { header: Record<string, unknown>; claims: Record<string, unknown> }

export interface FakeGoogleOAuthOptions {
  serviceAccounts?: TestServiceAccount[];
  users?: TestAuthorizedUser[];
  /** Lifetime of the tokens issued; default 3599 s, as Google's. */
  expiresInSeconds?: number;
  /** The `aud` required of assertions; default the fake's own token URL. */
  audience?: string;
  /** The fake's clock (epoch ms) for `iat` / `exp`; default the real one. */
  now?: () => number;
}

export interface FakeGoogleOAuth {
  url: string;
  tokenUrl: string;
  /** `host:port` for GCE_METADATA_HOST. */
  metadataHost: string;
  /** Token requests answered or refused, of each kind. */
  counts: { jwtBearer: number; refreshToken: number; metadata: number };
  /** The assertions that verified, decoded. */
  assertions: SeenAssertion[];
  /** The raw bodies posted to /token (to check a secret is where it belongs and nowhere else). */
  bodies: string[];
  refusals: string[];
  /** Answer the next `count` token requests with `status` instead. */
  failNext(count: number, status: number): void;
  /** Whether `token` is an access token this fake issued, unexpired (by the fake's clock) and not revoked. */
  isIssued(token: string): boolean;
  /** Revokes an access token before its expiry, as an administrator (or a rotated key) would. */
  revoke(token: string): void;
  expiresInSeconds: number;
  close(): Promise<void>;
}

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

function decodePart(part: string | undefined): Record<string, unknown> | undefined {
  if (part === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Starts the fake; close it when done. */
export async function startFakeGoogleOAuth(options: FakeGoogleOAuthOptions = {}): Promise<FakeGoogleOAuth> {
  const now = options.now ?? Date.now;
  const counts = { jwtBearer: 0, refreshToken: 0, metadata: 0 };
  const assertions: SeenAssertion[] = [];
  const bodies: string[] = [];
  const refusals: string[] = [];
  /** Access token -> when it expires (epoch ms, the fake's clock). */
  const issued = new Map<string, number>();
  const failures: number[] = [];
  let tokenUrl = '';
  const state = { expiresInSeconds: options.expiresInSeconds ?? 3599 };

  const issue = (res: http.ServerResponse, headers: Record<string, string> = {}): void => {
    const token = `ya29.fake-${randomBytes(12).toString('hex')}`;
    issued.set(token, now() + state.expiresInSeconds * 1000);
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', ...headers });
    res.end(JSON.stringify({ access_token: token, expires_in: state.expiresInSeconds, token_type: 'Bearer' }));
  };
  const refuse = (res: http.ServerResponse, status: number, error: string, description: string): void => {
    refusals.push(`${error}: ${description}`);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify({ error, error_description: description }));
  };

  const checkAssertion = (assertion: string): string | undefined => {
    const [h, c, s] = assertion.split('.');
    const header = decodePart(h);
    const claims = decodePart(c);
    if (header === undefined || claims === undefined || s === undefined) return 'Invalid JWT: not a JWS';
    if (header['alg'] !== 'RS256') return 'Invalid JWT: alg must be RS256';
    const account = (options.serviceAccounts ?? []).find((a) => a.clientEmail === claims['iss']);
    if (account === undefined) return 'Invalid JWT: unknown issuer';
    if (!verify('sha256', Buffer.from(`${h}.${c}`), account.publicKeyPem, Buffer.from(s, 'base64url'))) return 'Invalid JWT Signature.';
    if (header['kid'] !== undefined && header['kid'] !== account.privateKeyId) return 'Invalid JWT: kid is not this account\'s key';
    const audience = options.audience ?? tokenUrl;
    if (claims['aud'] !== audience) return `Invalid JWT: aud must be ${audience}`;
    const iat = claims['iat'];
    const exp = claims['exp'];
    const seconds = Math.floor(now() / 1000);
    if (typeof iat !== 'number' || typeof exp !== 'number' || exp <= seconds || iat > seconds + 60 || exp - iat > 3600) {
      return 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.';
    }
    if (typeof claims['scope'] !== 'string' || claims['scope'] === '') return 'Invalid JWT: scope is required';
    assertions.push({ header, claims });
    return undefined;
  };

  const server = http.createServer((req, res) => {
    const pieces: Buffer[] = [];
    req.on('data', (piece: Buffer) => pieces.push(piece));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method === 'GET' && path === '/computeMetadata/v1/instance/service-accounts/default/token') {
        counts.metadata += 1;
        if (req.headers['metadata-flavor'] !== 'Google') return refuse(res, 403, 'forbidden', 'Missing Metadata-Flavor: Google header');
        const failure = failures.shift();
        if (failure !== undefined) return refuse(res, failure, 'unavailable', 'metadata server failure injected by the test');
        return issue(res, { 'metadata-flavor': 'Google' });
      }
      if (req.method !== 'POST' || path !== '/token') return refuse(res, 404, 'not_found', `${req.method} ${path}`);
      const text = Buffer.concat(pieces).toString('utf8');
      bodies.push(text);
      const form = new URLSearchParams(text);
      const grant = form.get('grant_type');
      if (grant === JWT_BEARER) counts.jwtBearer += 1;
      else if (grant === 'refresh_token') counts.refreshToken += 1;
      const failure = failures.shift();
      if (failure !== undefined) return refuse(res, failure, failure >= 500 ? 'internal_failure' : 'invalid_request', 'failure injected by the test');
      if (!String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) return refuse(res, 400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
      if (grant === JWT_BEARER) {
        const problem = checkAssertion(form.get('assertion') ?? '');
        return problem === undefined ? issue(res) : refuse(res, 400, 'invalid_grant', problem);
      }
      if (grant === 'refresh_token') {
        const user = (options.users ?? []).find((u) => u.client_id === form.get('client_id'));
        if (user === undefined || user.client_secret !== form.get('client_secret')) return refuse(res, 401, 'invalid_client', 'The OAuth client was not found.');
        if (user.refresh_token !== form.get('refresh_token')) return refuse(res, 400, 'invalid_grant', 'Token has been expired or revoked.');
        return issue(res);
      }
      return refuse(res, 400, 'unsupported_grant_type', `Invalid grant_type: ${grant ?? ''}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  tokenUrl = `${url}/token`;
  return {
    url,
    tokenUrl,
    metadataHost: `127.0.0.1:${port}`,
    counts,
    assertions,
    bodies,
    refusals,
    failNext(count, status) {
      for (let i = 0; i < count; i += 1) failures.push(status);
    },
    isIssued: (token) => (issued.get(token) ?? 0) > now(),
    revoke: (token) => {
      issued.delete(token);
    },
    get expiresInSeconds() {
      return state.expiresInSeconds;
    },
    set expiresInSeconds(value: number) {
      state.expiresInSeconds = value;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
