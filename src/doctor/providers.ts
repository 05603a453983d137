/**
 * A provider's checks for `llmux doctor`: is its credential there, and does its endpoint accept it.
 * One check per platform (`PROVIDER_CHECKS`): `http` is a base URL and a key sent the way the
 * provider's wire format sends it; Bedrock, Vertex AI and Azure OpenAI say where their credentials
 * came from (their carrier's `credentials()`, never a value) and make the cheapest authenticated
 * call each has (below).
 *
 * The `http` check calls `GET {base_url}/models` — listing models is the cheapest authenticated
 * call OpenAI- and Anthropic-format servers have — with the headers a model request would carry
 * (the dialect's credential and version headers over the provider's own `headers`). It reads the
 * status only: 2xx passes, 401/403 means the credential was refused, no connection means the
 * endpoint is unreachable. Redirects are not followed, so a credential is only ever sent to the
 * configured address. Nothing in a result holds a credential or an answer's body.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderConfig } from '../config/types.ts';
import { resolveApiKey, resolveSecret } from '../catalog/providers.ts';
import { formatHeadersFor } from '../providers/upstream-body.ts';
import { requestFor } from '../providers/upstream.ts';
import { httpCredentialHeaders } from '../platforms/http.ts';
import { platforms } from '../platforms/index.ts';
import type { Carrier, CredentialState, OutgoingRequest, UpstreamCall } from '../platforms/index.ts';
import type { CheckResult, Verdict } from './report.ts';

export interface ProviderCheckOptions {
  env: Record<string, string | undefined>;
  /** How long the endpoint may take to answer. */
  timeoutMs: number;
  /** Whether a model uses the provider: when not, its problems are warnings, not failures. */
  needed: boolean;
  /** The upstream ids of the models that use it, in config order (Bedrock's check calls the first). */
  upstreamIds?: readonly string[];
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
async function statusOf(url: string, headers: Record<string, string>, timeoutMs: number): Promise<number> {
  return (await answerOf(url, headers, timeoutMs)).status;
}

/** The status and headers of a request (GET, or POST with `body`), as {@link statusOf} makes it. */
function answerOf(url: string, headers: Record<string, string>, timeoutMs: number, body?: string): Promise<{ status: number; headers: IncomingHttpHeaders }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = requestFor(target)(target, { method: body === undefined ? 'GET' : 'POST', headers, agent: false }, (res) => {
      clearTimeout(timer);
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
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
    req.end(body);
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
    ...formatHeadersFor(provider.format, {}),
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
  const refused = provider.keyless
    ? { detail: 'it wants a credential', hint: `set providers.${provider.id}.api_key` }
    : { detail: 'the credential was refused', hint: `the provider refused the key in ${credentialSource(provider)}: check it` };
  return [credential.row, modelListRow(provider, name, `${shown}: ${took}`, status, bad, refused)];
};

/** What a model list's status says: listed, the credential refused, or why it could not tell. */
function modelListRow(provider: ProviderConfig, name: string, said: string, status: number, bad: Verdict, refused: { detail: string; hint: string }): CheckResult {
  if (status >= 200 && status < 300) return { name, verdict: 'ok', detail: said };
  if (status === 401 || status === 403) return { name, verdict: bad, detail: `${said}: ${refused.detail}`, hint: refused.hint };
  if (status === 404 || status === 405) return { name, verdict: 'warn', detail: `${said}: reachable, but it lists no models there, so the credential was not checked` };
  if (status >= 300 && status < 400) return { name, verdict: 'warn', detail: `${said}: a redirect (not followed)`, hint: `check providers.${provider.id}.base_url` };
  if (status === 429) return { name, verdict: 'warn', detail: `${said}: rate limited, so the credential was not confirmed` };
  return { name, verdict: 'warn', detail: `${said}`, hint: 'the provider reports a problem; try again later' };
}

/** A provider's carrier, bound as the gateway binds it, for a check to authorise a call the way a request is. */
function carrierOf(provider: ProviderConfig, env: Record<string, string | undefined>): Carrier {
  return platforms[provider.platform ?? 'http'].bind(provider, { secret: (written) => resolveSecret(written, env), env, now: Date.now });
}

/** The credential row of a cloud platform: where its credentials come from, or why there are none (bounded). */
async function platformCredentialRow(provider: ProviderConfig, carrier: Carrier, options: ProviderCheckOptions, bad: Verdict, hint: string): Promise<CheckResult> {
  const name = `provider ${provider.id}: credential`;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<CredentialState>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, reason: `not resolved within ${options.timeoutMs} ms` }), options.timeoutMs);
  });
  const state = await Promise.race([carrier.credentials?.() ?? Promise.resolve<CredentialState>({ ok: false, reason: 'no credential check' }), late]);
  clearTimeout(timer);
  return state.ok ? { name, verdict: 'ok', detail: state.detail } : { name, verdict: bad, detail: state.reason, hint };
}

/**
 * Bedrock: its credential chain, then a call the runtime endpoint answers without running a model —
 * InvokeModel (Converse for a `converse` provider) of the provider's first model with an empty body,
 * signed as a request is: Bedrock checks
 * the signature and the IAM permission first, then refuses the body (400 ValidationException).
 * That 400 confirms both; a 403 names what was refused.
 */
export const checkBedrockProvider: ProviderCheck = async (provider, options) => {
  const bad: Verdict = options.needed ? 'fail' : 'warn';
  const carrier = carrierOf(provider, options.env);
  const credential = await platformCredentialRow(provider, carrier, options, bad, `set ${carrier.credentialSetting}`);
  const name = `provider ${provider.id}: endpoint`;
  if (credential.verdict !== 'ok') return [credential, { name, verdict: 'off', detail: 'not tried without credentials' }];
  const upstreamId = options.upstreamIds?.[0] ?? 'llmux-doctor-probe';
  const call: UpstreamCall = { upstreamId, format: provider.format, stream: false, formatHeaders: {} };
  const outgoing: OutgoingRequest = { call, target: carrier.target(call), body: '{}', headers: carrier.headers(call) };
  const shown = `${provider.format === 'converse' ? 'Converse' : 'InvokeModel'} ${upstreamId} (an empty body: no model runs)`;
  let answer: { status: number; headers: IncomingHttpHeaders };
  const startedMs = performance.now();
  try {
    await carrier.authorise(outgoing);
  } catch (error) {
    return [credential, { name, verdict: bad, detail: `the request could not be signed: ${error instanceof Error ? error.message : String(error)}` }];
  }
  try {
    answer = await answerOf(`${carrier.endpoint.replace(/\/+$/, '')}${outgoing.target}`, { ...outgoing.headers, 'content-type': 'application/json' }, options.timeoutMs, '{}');
  } catch (error) {
    return [credential, { name, verdict: bad, ...unreachable(error, provider, options.timeoutMs) }];
  }
  const type = String(answer.headers['x-amzn-errortype'] ?? '').split(':')[0] ?? '';
  const said = `${shown}: ${answer.status}${type === '' ? '' : ` ${type}`} in ${Math.round(performance.now() - startedMs)} ms`;
  if (answer.status === 400) return [credential, { name, verdict: 'ok', detail: `${said}: the signature and the permission were accepted` }];
  if (answer.status === 403 && type === 'AccessDeniedException') {
    return [credential, { name, verdict: bad, detail: `${said}: the credentials are good but may not invoke this model`, hint: 'allow bedrock:InvokeModel and bedrock:InvokeModelWithResponseStream on it, and enable the model in the Bedrock console' }];
  }
  if (answer.status === 401 || answer.status === 403) return [credential, { name, verdict: bad, detail: `${said}: the credentials were refused`, hint: `check ${carrier.credentialSetting}, and this machine's clock` }];
  if (answer.status === 404) return [credential, { name, verdict: 'warn', detail: `${said}: no such model in ${provider.bedrock?.region ?? 'this region'}`, hint: `check the model's upstream_id (an inference profile such as us.anthropic.… may be needed)` }];
  return [credential, { name, verdict: 'warn', detail: said, hint: 'Bedrock reports a problem; try again later' }];
};

/** Vertex AI: its credentials, proven by fetching an access token; no call is made to the endpoint itself. */
export const checkVertexProvider: ProviderCheck = async (provider, options) => {
  const bad: Verdict = options.needed ? 'fail' : 'warn';
  const carrier = carrierOf(provider, options.env);
  const credential = await platformCredentialRow(provider, carrier, options, bad, `check ${carrier.credentialSetting}`);
  return [credential, {
    name: `provider ${provider.id}: endpoint`,
    verdict: 'off',
    detail: `${carrier.endpoint}: not called (Vertex AI has no call cheaper than a prediction); the access token above is what requests send`,
  }];
};

/** Azure OpenAI: its credential, then the resource's model list with it (`GET {base_url}/models`, with api-version on the classic form). */
export const checkAzureProvider: ProviderCheck = async (provider, options) => {
  const bad: Verdict = options.needed ? 'fail' : 'warn';
  const carrier = carrierOf(provider, options.env);
  const credential = await platformCredentialRow(provider, carrier, options, bad, `set ${carrier.credentialSetting}`);
  const name = `provider ${provider.id}: endpoint`;
  if (credential.verdict !== 'ok') return [credential, { name, verdict: 'off', detail: 'not tried without a credential' }];
  const call: UpstreamCall = { upstreamId: '', format: 'chat', stream: false, formatHeaders: {} };
  const outgoing: OutgoingRequest = { call, target: '/models', body: '', headers: { ...provider.headers, accept: 'application/json' } };
  await carrier.authorise(outgoing);
  const version = provider.azure?.apiVersion;
  const query = version === undefined ? '' : `?api-version=${encodeURIComponent(version)}`;
  const shown = `GET ${shownUrl(provider.baseUrl)}/models${query}`;
  const startedMs = performance.now();
  let status: number;
  try {
    status = await statusOf(`${provider.baseUrl}/models${query}`, outgoing.headers, options.timeoutMs);
  } catch (error) {
    return [credential, { name, verdict: bad, ...unreachable(error, provider, options.timeoutMs) }];
  }
  const refused = { detail: 'the credential was refused', hint: `check ${carrier.credentialSetting}` };
  return [credential, modelListRow(provider, name, `${shown}: ${status} in ${Math.round(performance.now() - startedMs)} ms`, status, bad, refused)];
};

/** The check of each platform; a platform module adds its own. */
export const PROVIDER_CHECKS: Readonly<Record<string, ProviderCheck>> = {
  http: checkHttpProvider,
  bedrock: checkBedrockProvider,
  vertex: checkVertexProvider,
  azure: checkAzureProvider,
};

/** The checks of `provider`, by its platform. */
export async function checkProvider(provider: ProviderConfig, options: ProviderCheckOptions): Promise<CheckResult[]> {
  const platform = platformOf(provider);
  const check = PROVIDER_CHECKS[platform];
  if (check === undefined) return [{ name: `provider ${provider.id}`, verdict: 'warn', detail: `llmux doctor has no check for platform "${platform}"` }];
  return check(provider, options);
}
