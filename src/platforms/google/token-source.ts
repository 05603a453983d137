/**
 * OAuth 2.0 access tokens for Vertex AI (llmux.md section 8), from the source
 * ./credentials-file.ts finds:
 *
 * - a `service_account` file: an RS256 JWT assertion (./jwt.ts, audience = the file's `token_uri`)
 *   form-posted to that `token_uri` with `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`;
 * - an `authorized_user` file: the refresh-token grant (`client_id`, `client_secret`,
 *   `refresh_token`) posted to https://oauth2.googleapis.com/token, as google-auth-library does;
 * - the metadata server: `GET http://{GCE_METADATA_HOST}/computeMetadata/v1/instance/service-accounts/default/token`
 *   with `Metadata-Flavor: Google`, whose answer must carry the same header.
 *
 * A token is reused until less than five minutes or half its lifetime (whichever is smaller) remain;
 * then the next request waits for one refresh, shared by every request that arrives meanwhile. A
 * refresh that fails on the network, a 5xx or a 429 is tried again with doubling delays, a bounded
 * number of times; a refusal (400 `invalid_grant`, 401) is final. If every attempt fails while the
 * old token has not yet expired, the old token is used. A failure becomes 502 `upstream_auth_failed`
 * naming the setting to check, and never holds a token, refresh token, private key or assertion:
 * whatever the endpoint said is searched for those before it is quoted.
 */
import { homedir } from 'node:os';
import { readFile } from 'node:fs/promises';
import { platformAuthFailed } from '../../common/errors.ts';
import type { UpstreamError } from '../../common/errors.ts';
import { fetchText as realFetchText } from '../../common/fetch-text.ts';
import { createRefreshedValue } from '../../common/refreshed-value.ts';
import type { FetchText, TextRequest, TextResponse } from '../../common/fetch-text.ts';
import { CredentialsFileError, GOOGLE_TOKEN_URL, locateCredentials } from './credentials-file.ts';
import type { Env, GoogleCredentialSource } from './credentials-file.ts';
import { serviceAccountAssertion } from './jwt.ts';

export interface GoogleTokenSourceOptions {
  /** The provider's id, for messages (`providers.<id>.credentials_file`). */
  providerId: string;
  /** `providers.<id>.credentials_file`; without it `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's file, the metadata server. */
  credentialsFile?: string | undefined;
  env?: Env;
  homeDir?: string;
  readFile?: (path: string) => Promise<string>;
  fetchText?: FetchText;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Attempts of one refresh, the first included; default 3. */
  maxAttempts?: number;
  /** Delay before the first retry, doubled for each next one; default 250 ms. */
  retryDelayMs?: number;
  /** Deadline of one token request; default 10 s (3 s for the metadata server). */
  timeoutMs?: number;
}

export type GoogleCredentialKind = 'service-account' | 'authorized-user' | 'metadata-server';

export type GoogleCredentialDescription =
  | { ok: true; source: GoogleCredentialKind; detail: string; expiresAtMs: number }
  | { ok: false; reason: string };

export interface GoogleTokenSource {
  /** An access token good for more than the reuse margin; throws 502 `upstream_auth_failed`. */
  token(): Promise<string>;
  /** `authorization: Bearer …`, and `x-goog-user-project` for an authorized_user file that names a quota project. */
  headers(): Promise<Record<string, string>>;
  /** Where tokens come from (fetching one if none is held), or why there are none; never throws. */
  describe(): Promise<GoogleCredentialDescription>;
  /**
   * The secret values in play now (the file's private key or client secret and refresh token, the
   * last assertion, the last two access tokens), for a redactor that must keep them out of answers
   * and logs.
   */
  secrets(): string[];
  /**
   * The upstream refused `accessToken` (a 401 before its expiry: revoked, or the clock is off): it is
   * forgotten, so the next request gets a new one. Many requests refused with the same token make
   * one refresh.
   */
  invalidate(accessToken: string): void;
}

const FIVE_MINUTES_MS = 5 * 60 * 1000;
const DEFAULT_LIFETIME_SECONDS = 3600;
const DEFAULT_MAX_ATTEMPTS = 3;
const DEFAULT_RETRY_DELAY_MS = 250;
const DEFAULT_TIMEOUT_MS = 10_000;
const METADATA_TIMEOUT_MS = 3_000;
const MAX_QUOTED_CHARS = 300;

interface HeldToken { accessToken: string; obtainedAtMs: number; expiresAtMs: number }

/** A refresh that failed: why, whether another attempt may help, and the setting to check. */
class RefreshError extends Error {
  constructor(message: string, readonly retryable: boolean, readonly setting: string) {
    super(message);
  }
}

/** Whether a token obtained at `obtainedAtMs` and expiring at `expiresAtMs` may still be handed out at `nowMs`. */
export function isReusable(held: { obtainedAtMs: number; expiresAtMs: number }, nowMs: number): boolean {
  const lifetimeMs = held.expiresAtMs - held.obtainedAtMs;
  return held.expiresAtMs - nowMs > Math.min(FIVE_MINUTES_MS, lifetimeMs / 2);
}

/** Creates the token source of one Vertex provider. Nothing is read or fetched until a token is asked for. */
export function createGoogleTokenSource(options: GoogleTokenSourceOptions): GoogleTokenSource {
  const env = options.env ?? process.env;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const fetchText = options.fetchText ?? realFetchText;
  const maxAttempts = Math.max(1, options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS);
  const retryDelayMs = options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS;
  const read = options.readFile ?? ((path: string) => readFile(path, 'utf8'));

  let source: Promise<GoogleCredentialSource> | undefined;
  /** The secrets in play (the file's, the last assertion, the last two access tokens), bounded. */
  let fileSecrets: string[] = [];
  let lastAssertion = '';
  let recentTokens: string[] = [];
  const secrets = (): string[] => [...fileSecrets, lastAssertion, ...recentTokens].filter((value) => value.length >= 8);

  /** Endpoint text with every secret in play taken out, shortened, before it is quoted. */
  const scrub = (text: string): string => {
    let out = text;
    for (const secret of secrets()) if (out.includes(secret)) out = out.split(secret).join('[redacted]');
    return out.slice(0, MAX_QUOTED_CHARS);
  };

  const locate = (): Promise<GoogleCredentialSource> => {
    source ??= locateCredentials({ providerId: options.providerId, credentialsFile: options.credentialsFile, env, homeDir: options.homeDir ?? homedir(), readFile: read }).then(
      (found) => {
        if (found.kind === 'file') {
          const file = found.file;
          fileSecrets = file.type === 'service_account' ? [file.privateKeyPem] : [file.clientSecret, file.refreshToken];
        }
        return found;
      },
      (err: unknown) => {
        // Not remembered: the operator may fix the file while llmux runs.
        source = undefined;
        throw err;
      },
    );
    return source;
  };

  const settingOf = (found: GoogleCredentialSource): string =>
    found.kind === 'file' ? `${found.setting} (${found.path})` : `the machine's service account on the metadata server ${found.host} (GCE_METADATA_HOST)`;

  /** A token endpoint's answer as a held token, or the reason it is not one. */
  const tokenOf = (response: TextResponse, where: string, setting: string, startedMs: number): HeldToken => {
    let json: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(response.body);
      if (typeof parsed === 'object' && parsed !== null) json = parsed as Record<string, unknown>;
    } catch {
      // Described below by status.
    }
    if (response.status < 200 || response.status > 299) {
      const error = typeof json['error'] === 'string' ? json['error'] : undefined;
      const description = typeof json['error_description'] === 'string' ? json['error_description'] : undefined;
      const said = [error, description].filter((part) => part !== undefined).map((part) => scrub(part as string)).join(': ');
      const retryable = response.status === 429 || response.status >= 500;
      throw new RefreshError(`${where} answered HTTP ${response.status}${said === '' ? '' : ` (${said})`}`, retryable, setting);
    }
    const accessToken = json['access_token'];
    if (typeof accessToken !== 'string' || accessToken === '') throw new RefreshError(`${where} answered without an access_token`, true, setting);
    const expiresIn = typeof json['expires_in'] === 'number' && json['expires_in'] > 0 ? json['expires_in'] : DEFAULT_LIFETIME_SECONDS;
    recentTokens = [accessToken, ...recentTokens.slice(0, 1)];
    return { accessToken, obtainedAtMs: startedMs, expiresAtMs: startedMs + expiresIn * 1000 };
  };

  /** One attempt at a new token. */
  const fetchToken = async (found: GoogleCredentialSource): Promise<HeldToken> => {
    const setting = settingOf(found);
    const startedMs = now();
    let request: TextRequest;
    let where: string;
    if (found.kind === 'metadata') {
      where = `the metadata server ${found.host}`;
      request = {
        method: 'GET',
        url: `http://${found.host}/computeMetadata/v1/instance/service-accounts/default/token`,
        headers: { 'metadata-flavor': 'Google' },
        timeoutMs: options.timeoutMs ?? METADATA_TIMEOUT_MS,
      };
    } else {
      const file = found.file;
      let form: URLSearchParams;
      let url: string;
      if (file.type === 'service_account') {
        url = file.tokenUri;
        let assertion: string;
        try {
          assertion = serviceAccountAssertion({ clientEmail: file.clientEmail, privateKeyPem: file.privateKeyPem, privateKeyId: file.privateKeyId, tokenUri: url, nowMs: startedMs });
        } catch {
          throw new RefreshError(`the private_key in ${found.path} is not a usable RSA private key`, false, setting);
        }
        lastAssertion = assertion;
        form = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion });
      } else {
        url = GOOGLE_TOKEN_URL;
        form = new URLSearchParams({ grant_type: 'refresh_token', client_id: file.clientId, client_secret: file.clientSecret, refresh_token: file.refreshToken });
      }
      where = `the token endpoint ${url.split('?')[0] ?? url}`;
      request = {
        method: 'POST',
        url,
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form.toString(),
        timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      };
    }
    let response: TextResponse;
    try {
      response = await fetchText(request);
    } catch (err) {
      throw new RefreshError(`${where} did not answer (${scrub(err instanceof Error ? err.message : 'network error')})`, true, setting);
    }
    if (found.kind === 'metadata' && response.status >= 200 && response.status < 300 && response.headers['metadata-flavor'] !== 'Google') {
      throw new RefreshError(`${where} answered without Metadata-Flavor: Google, so it is not a metadata server`, false, setting);
    }
    return tokenOf(response, where, setting, startedMs);
  };

  /** One refresh: attempts with doubling delays while failures may pass. */
  const refreshOnce = async (): Promise<HeldToken> => {
    const found = await locate();
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await fetchToken(found);
      } catch (err) {
        if (!(err instanceof RefreshError) || !err.retryable || attempt >= maxAttempts) throw err;
        await sleep(retryDelayMs * 2 ** (attempt - 1));
      }
    }
  };

  const authError = (err: unknown): UpstreamError => {
    if (err instanceof RefreshError || err instanceof CredentialsFileError) {
      return platformAuthFailed(options.providerId, err.message, err.setting);
    }
    return platformAuthFailed(options.providerId, 'getting a Google access token failed unexpectedly', `providers.${options.providerId}.credentials_file and GOOGLE_APPLICATION_CREDENTIALS`);
  };

  const held = createRefreshedValue<HeldToken>({
    load: refreshOnce,
    isFresh: (token) => isReusable(token, now()),
    isUsable: (token) => token.expiresAtMs > now(),
  });

  /** The token last handed out, to tell a refused one from a renewed one. */
  let current: HeldToken | undefined;
  const obtain = async (): Promise<HeldToken> => {
    try {
      current = await held.get();
      return current;
    } catch (err) {
      throw authError(err);
    }
  };

  return {
    secrets,
    invalidate(accessToken) {
      if (current?.accessToken === accessToken) held.drop(current);
    },
    async token() {
      return (await obtain()).accessToken;
    },
    async headers() {
      const token = await obtain();
      const found = await locate();
      const quotaProject = found.kind === 'file' && found.file.type === 'authorized_user' ? found.file.quotaProjectId : undefined;
      return { authorization: `Bearer ${token.accessToken}`, ...(quotaProject === undefined ? {} : { 'x-goog-user-project': quotaProject }) };
    },
    async describe() {
      try {
        const token = await obtain();
        const found = await locate();
        if (found.kind === 'metadata') return { ok: true, source: 'metadata-server', detail: `the default service account on the metadata server ${found.host}`, expiresAtMs: token.expiresAtMs };
        const what = found.file.type === 'service_account' ? `service account ${found.file.clientEmail}` : 'the user credentials (authorized_user)';
        return {
          ok: true,
          source: found.file.type === 'service_account' ? 'service-account' : 'authorized-user',
          detail: `${what} in ${found.path} (${found.setting})`,
          expiresAtMs: token.expiresAtMs,
        };
      } catch (err) {
        return { ok: false, reason: err instanceof Error ? err.message : String(err) };
      }
    },
  };
}

