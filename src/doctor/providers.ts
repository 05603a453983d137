/**
 * A provider's checks for `llmux doctor`: is its credential there, and does its endpoint accept it.
 * One check per platform (`PROVIDER_CHECKS`): a platform whose credentials come from a chain or a
 * token endpoint (Bedrock, Vertex, Azure AD) adds its own entry beside `http`, which is today's
 * providers: a base URL and a key sent the way the provider's wire format sends it.
 *
 * The `http` check calls `GET {base_url}/models` — listing models is the cheapest authenticated
 * call OpenAI- and Anthropic-format servers have — with the headers a model request would carry
 * (the dialect's credential and version headers over the provider's own `headers`). It reads the
 * status only: 2xx passes, 401/403 means the credential was refused, no connection means the
 * endpoint is unreachable. Redirects are not followed, so a credential is only ever sent to the
 * configured address. Nothing in a result holds a credential or an answer's body.
 */
import http from 'node:http';
import type { ProviderConfig } from '../config/types.ts';
import { resolveApiKey } from '../catalog/providers.ts';
import { dialects } from '../dialects/index.ts';
import { loadHttps } from '../providers/upstream.ts';
import { httpCredentialHeaders } from '../platforms/http.ts';
import type { CheckResult, Verdict } from './report.ts';

export interface ProviderCheckOptions {
  env: Record<string, string | undefined>;
  /** How long the endpoint may take to answer. */
  timeoutMs: number;
  /** Whether a model uses the provider: when not, its problems are warnings, not failures. */
  needed: boolean;
}

/** The checks of one provider: rows named `provider ID: …`. */
export type ProviderCheck = (provider: ProviderConfig, options: ProviderCheckOptions) => Promise<CheckResult[]>;

const ENV_PREFIX = 'env:';

/** The platform that carries a provider's requests; `http` unless its config names another. */
export function platformOf(provider: ProviderConfig): string {
  return 'platform' in provider && typeof provider.platform === 'string' ? provider.platform : 'http';
}

/** Where a provider's credential comes from, in words that never hold it: `env:OPENAI_API_KEY`. */
export function credentialSource(provider: ProviderConfig): string {
  const written = provider.apiKey ?? '';
  return written.startsWith(ENV_PREFIX) ? written : `providers.${provider.id}.api_key in the config`;
}

/** `http://127.0.0.1:11434`: where the server is. */
function originOf(raw: string): string {
  try {
    return new URL(raw).origin;
  } catch {
    return '(not a URL)';
  }
}

/** The configured URL without user info or query, for a message. */
function shownUrl(raw: string): string {
  try {
    const url = new URL(raw);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
  } catch {
    return '(not a URL)';
  }
}

/**
 * The status of `GET url`, over node:http(s) as the gateway reaches providers (no redirect
 * followed, the body not read); rejects with the socket's error, or a TimeoutError.
 */
function statusOf(url: string, headers: Record<string, string>, timeoutMs: number): Promise<number> {
  const target = new URL(url);
  const lib = target.protocol === 'https:' ? loadHttps() : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(target, { method: 'GET', headers, agent: false }, (res) => {
      clearTimeout(timer);
      resolve(res.statusCode ?? 0);
      res.destroy();
    });
    const timer = setTimeout(() => {
      const error = new Error(`no answer within ${timeoutMs} ms`);
      error.name = 'TimeoutError';
      req.destroy(error);
    }, timeoutMs);
    req.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end();
  });
}

/** Why a request got no answer, and what to do: refused, unknown host, or silence. */
export function unreachable(error: unknown, provider: ProviderConfig, timeoutMs: number): { detail: string; hint: string } {
  const shown = shownUrl(provider.baseUrl);
  const origin = originOf(provider.baseUrl);
  const err = error instanceof Error ? error : new Error(String(error));
  if (err.name === 'TimeoutError') {
    return { detail: `no answer from ${shown} within ${timeoutMs} ms`, hint: `is ${origin} reachable from here? (a slow one: raise --timeout-ms)` };
  }
  // Several addresses tried (localhost: ::1 and 127.0.0.1) fail as one AggregateError.
  const first = err instanceof AggregateError && err.errors[0] instanceof Error ? err.errors[0] : err;
  const code = (err as NodeJS.ErrnoException).code ?? (first as NodeJS.ErrnoException).code ?? first.message;
  if (code === 'ECONNREFUSED') return { detail: `connection refused by ${shown}`, hint: `is the server at ${origin} running?` };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return { detail: `cannot resolve the host of ${shown}`, hint: `check providers.${provider.id}.base_url and this machine's DNS` };
  }
  if (/CERT|SSL|TLS/.test(code)) return { detail: `TLS with ${origin} failed (${code})`, hint: 'a private certificate authority goes in NODE_EXTRA_CA_CERTS' };
  return { detail: `cannot reach ${shown} (${code})`, hint: `check providers.${provider.id}.base_url, and that ${origin} is reachable from here` };
}

/** The credential row; undefined key when it is missing (the endpoint is then not tried). */
function credentialCheck(provider: ProviderConfig, options: ProviderCheckOptions, bad: Verdict): { row: CheckResult; key: string | undefined; missing: boolean } {
  const name = `provider ${provider.id}: credential`;
  if (provider.keyless) return { row: { name, verdict: 'ok', detail: 'none needed' }, key: undefined, missing: false };
  const key = resolveApiKey(provider, options.env);
  const source = credentialSource(provider);
  if (key !== undefined) return { row: { name, verdict: 'ok', detail: `from ${source}` }, key, missing: false };
  const variable = source.slice(ENV_PREFIX.length);
  return { row: { name, verdict: bad, detail: `${source} is not set`, hint: `set ${variable}` }, key: undefined, missing: true };
}

/** Today's providers: the credential, then `GET {base_url}/models` with it. */
export const checkHttpProvider: ProviderCheck = async (provider, options) => {
  const bad: Verdict = options.needed ? 'fail' : 'warn';
  const credential = credentialCheck(provider, options, bad);
  const name = `provider ${provider.id}: endpoint`;
  if (credential.missing) return [credential.row, { name, verdict: 'off', detail: 'not tried without a credential' }];
  const url = `${provider.baseUrl}/models`;
  const shown = `GET ${shownUrl(provider.baseUrl)}/models`;
  const headers = {
    ...provider.headers,
    ...dialects[provider.format].formatHeaders({}),
    ...(credential.key === undefined ? {} : httpCredentialHeaders(provider.format, credential.key)),
    accept: 'application/json',
  };
  const startedMs = performance.now();
  let status: number;
  try {
    status = await statusOf(url, headers, options.timeoutMs);
  } catch (error) {
    return [credential.row, { name, verdict: bad, ...unreachable(error, provider, options.timeoutMs) }];
  }
  const took = `${status} in ${Math.round(performance.now() - startedMs)} ms`;
  const row = ((): CheckResult => {
    if (status >= 200 && status < 300) return { name, verdict: 'ok', detail: `${shown}: ${took}` };
    if (status === 401 || status === 403) {
      return provider.keyless
        ? { name, verdict: bad, detail: `${shown}: ${took}: it wants a credential`, hint: `set providers.${provider.id}.api_key` }
        : { name, verdict: bad, detail: `${shown}: ${took}: the credential was refused`, hint: `the provider refused the key in ${credentialSource(provider)}: check it` };
    }
    if (status === 404 || status === 405) return { name, verdict: 'warn', detail: `${shown}: ${took}: reachable, but it lists no models there, so the credential was not checked` };
    if (status >= 300 && status < 400) return { name, verdict: 'warn', detail: `${shown}: ${took}: a redirect (not followed)`, hint: `check providers.${provider.id}.base_url` };
    if (status === 429) return { name, verdict: 'warn', detail: `${shown}: ${took}: rate limited, so the credential was not confirmed` };
    return { name, verdict: 'warn', detail: `${shown}: ${took}`, hint: 'the provider reports a problem; try again later' };
  })();
  return [credential.row, row];
};

/** The check of each platform; a platform module adds its own. */
export const PROVIDER_CHECKS: Readonly<Record<string, ProviderCheck>> = { http: checkHttpProvider };

/** The checks of `provider`, by its platform. */
export async function checkProvider(provider: ProviderConfig, options: ProviderCheckOptions): Promise<CheckResult[]> {
  const platform = platformOf(provider);
  const check = PROVIDER_CHECKS[platform];
  if (check === undefined) return [{ name: `provider ${provider.id}`, verdict: 'warn', detail: `llmux doctor has no check for platform "${platform}"` }];
  return check(provider, options);
}
