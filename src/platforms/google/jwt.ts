/**
 * The RS256 JWT a Google service account signs to get an access token (RFC 7523's JWT bearer
 * grant, as Google's OAuth 2.0 for server-to-server applications describes it): header
 * `{alg: RS256, typ: JWT, kid: private_key_id}`, claims `iss` = the account's `client_email`,
 * `scope`, `aud` = the `token_uri` the assertion is posted to, `iat` and `exp` = `iat` + 3600.
 * Signed with `node:crypto` (RSASSA-PKCS1-v1_5 over SHA-256) from the key file's PEM private key.
 */
import { createPrivateKey, sign } from 'node:crypto';

/** Vertex AI's scope. */
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

/** The lifetime Google accepts at most for an assertion (one hour). */
const ASSERTION_LIFETIME_SECONDS = 3600;

export interface AssertionOptions {
  clientEmail: string;
  /** The PEM private key, as `private_key` in the key file. */
  privateKeyPem: string;
  privateKeyId?: string | undefined;
  /** Where the assertion will be posted: its audience. */
  tokenUri: string;
  scope?: string;
  nowMs: number;
}

function base64url(data: string | Buffer): string {
  return Buffer.from(data).toString('base64url');
}

/** A compact JWS: `base64url(header).base64url(claims).base64url(RS256 signature)`. */
export function signJwt(header: Readonly<Record<string, unknown>>, claims: Readonly<Record<string, unknown>>, privateKeyPem: string): string {
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
  // createPrivateKey throws on a key that is not PEM; its message does not quote the key.
  const signature = sign('sha256', Buffer.from(input), createPrivateKey(privateKeyPem));
  return `${input}.${base64url(signature)}`;
}

/** The signed assertion a service account exchanges at `tokenUri` for an access token. */
export function serviceAccountAssertion(options: AssertionOptions): string {
  const iat = Math.floor(options.nowMs / 1000);
  const header = { alg: 'RS256', typ: 'JWT', ...(options.privateKeyId === undefined || options.privateKeyId === '' ? {} : { kid: options.privateKeyId }) };
  const claims = { iss: options.clientEmail, scope: options.scope ?? CLOUD_PLATFORM_SCOPE, aud: options.tokenUri, iat, exp: iat + ASSERTION_LIFETIME_SECONDS };
  return signJwt(header, claims, options.privateKeyPem);
}
