/**
 * The `azure` platform (llmux.md section 8): Azure OpenAI, in either of its two URL layouts.
 *
 * - The v1 surface, a `base_url` ending in `/openai/v1`: `{base_url}/chat/completions` and
 *   `{base_url}/responses`, as OpenAI's own API; the deployment name is the body's `model` (the
 *   upstream id); no `api-version`.
 * - Classic deployments, with `api_version`: `{base_url}/deployments/{upstream_id}/chat/completions?api-version=…`,
 *   and Responses at `{base_url}/responses?api-version=…` with the deployment as `model` (as
 *   openai-node's AzureOpenAI builds them; `base_url` is `https://NAME.openai.azure.com/openai`).
 *
 * Authorised by `api-key: <api_key>`, or `Authorization: Bearer <azure_ad_token>` (a Microsoft Entra
 * token), each written in the config as the value or `env:NAME` and read per request.
 *
 * Answers are OpenAI's. Azure's own additions are read leniently by the translators and the usage
 * tap: a stream's first chunk may hold only `prompt_filter_results` (no choices, empty id and
 * model), chunks carry `content_filter_results`; a prompt its content filter refuses is a 400 with
 * `"code": "content_filter"` and an `innererror`, which keeps its status and code here.
 */
import type { ProviderConfig } from '../config/types.ts';
import type { UpstreamFormat } from '../formats/wire.ts';
import { apiKeySetting, readJsonError } from './http.ts';
import type { Carrier, Platform, UpstreamCall } from './platform.ts';

const ENV_PREFIX = 'env:';

/** Where a written credential is set, in words without its value. */
function settingOf(provider: ProviderConfig, field: string, written: string): string {
  const setting = `providers.${provider.id}.${field}`;
  return written.startsWith(ENV_PREFIX) ? `the environment variable ${written.slice(ENV_PREFIX.length)} (${setting})` : `${setting} in the llmux config`;
}

/** Each format's path under the base URL, for the v1 surface and for classic deployments (`api-version` added by the caller). */
const OPERATIONS: { readonly [F in UpstreamFormat]?: { v1: string; classic(call: UpstreamCall): string } } = {
  chat: { v1: '/chat/completions', classic: (call) => `/deployments/${encodeURIComponent(call.upstreamId)}/chat/completions` },
  responses: { v1: '/responses', classic: () => '/responses' },
};

export const azurePlatform: Platform = {
  name: 'azure',
  bind(provider, services): Carrier {
    const settings = provider.azure ?? {};
    const versionParameter = settings.apiVersion === undefined ? undefined : `api-version=${encodeURIComponent(settings.apiVersion)}`;
    const apiVersion = versionParameter === undefined ? undefined : `?${versionParameter}`;
    const adToken = settings.azureAdToken;
    const credentialSetting = adToken === undefined ? apiKeySetting(provider) : settingOf(provider, 'azure_ad_token', adToken);
    // `chosen`: the key of the provider's `api_keys` routing picked for this attempt, as written.
    const credential = (chosen: string | undefined): Record<string, string> | undefined => {
      if (adToken !== undefined) {
        const token = services.secret(adToken);
        return token === undefined ? undefined : { authorization: `Bearer ${token}` };
      }
      const key = services.secret(chosen ?? provider.apiKey);
      return key === undefined ? undefined : { 'api-key': key };
    };
    return {
      provider,
      endpoint: provider.baseUrl,
      credentialSetting,
      target(call) {
        const operation = OPERATIONS[call.format];
        if (operation === undefined) throw new Error(`Azure OpenAI does not carry the ${call.format} format`);
        return apiVersion === undefined ? operation.v1 : `${operation.classic(call)}${apiVersion}`;
      },
      envelope: () => undefined,
      headers: (call) => ({ accept: call.stream ? 'text/event-stream' : 'application/json', ...call.formatHeaders }),
      authorise(request) {
        const headers = credential(request.apiKey);
        // The message names no value; the attempts answer 502 upstream_auth_failed naming the setting.
        if (headers === undefined) throw new Error('its credential is not set');
        Object.assign(request.headers, headers);
        // A stored response read back for its client (src/providers/forward.ts: GET /responses/{id})
        // is not one of the operations above, and the classic form needs its api-version there too.
        if (versionParameter !== undefined && !/[?&]api-version=/.test(request.target)) {
          request.target += `${request.target.includes('?') ? '&' : '?'}${versionParameter}`;
        }
        return undefined;
      },
      events: (answer) => (String(answer.headers['content-type'] ?? '').includes('text/event-stream') ? answer : undefined),
      readError: (status, _headers, text) => readJsonError(status, text),
      credentials() {
        const set = credential(undefined) !== undefined;
        return Promise.resolve(set ? { ok: true, detail: `from ${credentialSetting}` } : { ok: false, reason: `${credentialSetting} is not set` });
      },
      secrets() {
        const token = adToken === undefined ? undefined : services.secret(adToken);
        const key = services.secret(provider.apiKey);
        return [token, key].filter((value): value is string => value !== undefined);
      },
    };
  },
};
