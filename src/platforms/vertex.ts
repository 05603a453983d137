/**
 * The `vertex` platform (llmux.md section 8): Google Cloud Vertex AI, under
 * `{endpoint}/v1/projects/{project}/locations/{location}`.
 *
 * - `anthropic` (Claude): `…/publishers/anthropic/models/{upstream_id}:rawPredict`
 *   (`:streamRawPredict` streamed, answered as the messages format's SSE), the body without `model`
 *   (the path names it; `stream` stays, as the Anthropic Vertex SDK sends it) and with
 *   `anthropic_version: "vertex-2023-10-16"`. The client's `anthropic-beta` values go on in the
 *   header when Vertex accepts them there, in the body's `anthropic_beta` when it takes them only
 *   there, and are dropped otherwise (./anthropic-betas.ts); `anthropic-version` is not sent.
 * - `openai`: Vertex's OpenAI-compatible endpoint, `…/endpoints/openapi/chat/completions`, the
 *   chat body as it is; its `model` is the upstream id, which Vertex wants as `publisher/model`
 *   (`google/gemini-2.5-flash`, `meta/llama-4-maverick-17b-128e-instruct-maas`).
 * - `gemini`: `…/publishers/google/models/{upstream_id}:generateContent`
 *   (`:streamGenerateContent?alt=sse`), the Gemini body as it is (it names no model).
 *
 * The endpoint is `https://aiplatform.googleapis.com` for `global` (where Google serves its newest
 * Claude models first), `https://aiplatform.{us|eu}.rep.googleapis.com` for the multi-regions, else
 * `https://{location}-aiplatform.googleapis.com`; or `base_url`, what comes before `/v1/projects/…`
 * (src/config/entries.ts reads them). Every request carries `Authorization: Bearer` with an OAuth
 * access token (./google/token-source.ts). A 401 on a token that has not expired (revoked, or this
 * machine's clock is off) drops it: the attempt is made once more with a new one.
 *
 * Errors come in Google's shape (`{"error": {code, message, status}}`, sometimes inside an array)
 * or, from Claude, in Anthropic's; both are read.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderConfig, VertexSettings } from '../config/types.ts';
import type { UpstreamFormat } from '../formats/wire.ts';
import { createGoogleTokenSource } from './google/token-source.ts';
import { VERTEX_BETAS, VERTEX_BODY_BETAS, acceptedBetas } from './anthropic-betas.ts';
import { readJsonError } from './http.ts';
import type { Carrier, Platform, UpstreamCall, UpstreamErrorWords } from './platform.ts';

/** What a Claude request body on Vertex carries (the Anthropic Vertex SDK's default). */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/** The model id as a path segment before `:method`: `@` kept (`claude-sonnet-4-5@20250929`), `:` and `/` encoded. */
function modelSegment(upstreamId: string): string {
  return encodeURIComponent(upstreamId).replaceAll('%40', '@');
}

/** Each format's operation under `…/locations/{location}`. */
const OPERATIONS: { readonly [F in UpstreamFormat]?: (call: UpstreamCall) => string } = {
  messages: (call) => `/publishers/anthropic/models/${modelSegment(call.upstreamId)}:${call.stream ? 'streamRawPredict' : 'rawPredict'}`,
  chat: () => '/endpoints/openapi/chat/completions',
  gemini: (call) => `/publishers/google/models/${modelSegment(call.upstreamId)}:${call.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
};

/** The endpoint of a Vertex provider: its `baseUrl`, project and location. */
export function vertexEndpoint(baseUrl: string, settings: VertexSettings): string {
  return `${baseUrl}/v1/projects/${encodeURIComponent(settings.project)}/locations/${encodeURIComponent(settings.location)}`;
}

/** Google's error body (`{"error": {code, message, status}}`, or a list of them), or Anthropic's. */
export function readVertexError(status: number, _headers: IncomingHttpHeaders, text: string): UpstreamErrorWords {
  let body = text;
  try {
    const parsed: unknown = JSON.parse(text);
    if (Array.isArray(parsed) && parsed.length > 0) body = JSON.stringify(parsed[0]);
  } catch {
    // Not JSON: read below as text.
  }
  const words = readJsonError(status, body);
  if (words.code !== undefined || words.type !== undefined) return words;
  try {
    const error = (JSON.parse(body) as { error?: { status?: unknown } }).error;
    if (typeof error?.status === 'string') return { ...words, code: error.status };
  } catch {
    // Already read as far as it goes.
  }
  return words;
}

/** Where a Vertex provider's credentials are set, in words without a value. */
function credentialSettingOf(provider: ProviderConfig, settings: VertexSettings): string {
  if (settings.credentialsFile !== undefined) return `providers.${provider.id}.credentials_file (${settings.credentialsFile})`;
  return `the Google credentials llmux finds for providers.${provider.id} (GOOGLE_APPLICATION_CREDENTIALS, gcloud's application-default login, or the metadata server)`;
}

export const vertexPlatform: Platform = {
  name: 'vertex',
  bind(provider, services): Carrier {
    const settings = provider.vertex;
    if (settings === undefined) throw new Error(`provider "${provider.id}" is on platform vertex without its settings`);
    const tokens = createGoogleTokenSource({ providerId: provider.id, credentialsFile: settings.credentialsFile, env: services.env, now: services.now });
    const accepted = new Set(settings.betas ?? VERTEX_BETAS);
    const betasOf = (call: UpstreamCall): { header: string[]; body: string[] } => {
      const betas = acceptedBetas(call.formatHeaders['anthropic-beta'], accepted);
      return { header: betas.filter((beta) => !VERTEX_BODY_BETAS.has(beta)), body: betas.filter((beta) => VERTEX_BODY_BETAS.has(beta)) };
    };
    return {
      provider,
      endpoint: vertexEndpoint(provider.baseUrl, settings),
      credentialSetting: credentialSettingOf(provider, settings),
      target(call) {
        const operation = OPERATIONS[call.format];
        if (operation === undefined) throw new Error(`Vertex AI does not carry the ${call.format} format`);
        return operation(call);
      },
      envelope(call) {
        if (call.format !== 'messages') return undefined;
        const { body } = betasOf(call);
        return new Map<string, unknown>([
          ['model', undefined],
          ['anthropic_version', VERTEX_ANTHROPIC_VERSION],
          ['anthropic_beta', body.length === 0 ? undefined : body],
        ]);
      },
      headers(call) {
        const accept = call.stream ? 'text/event-stream' : 'application/json';
        if (call.format !== 'messages') return { accept, ...call.formatHeaders };
        const { header } = betasOf(call);
        return header.length === 0 ? { accept } : { accept, 'anthropic-beta': header.join(',') };
      },
      authorise(request) {
        return tokens.headers().then((headers) => {
          Object.assign(request.headers, headers);
        });
      },
      events: (answer) => (String(answer.headers['content-type'] ?? '').includes('text/event-stream') ? answer : undefined),
      readError: readVertexError,
      renew(status, request) {
        if (status !== 401) return false;
        const bearer = request.headers['authorization'] ?? '';
        tokens.invalidate(bearer.replace(/^Bearer /, ''));
        return true;
      },
      async credentials() {
        const described = await tokens.describe();
        if (!described.ok) return described;
        return { ok: true, detail: `${described.detail}; an access token is held until ${new Date(described.expiresAtMs).toISOString()}` };
      },
      secrets: () => tokens.secrets(),
    };
  },
};
