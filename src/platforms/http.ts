/**
 * The `http` platform (llmux.md sections 2 and 8): a provider is its base URL, each format's
 * operation path under it, and its `api_key` (or the key of its `api_keys` chosen for the attempt)
 * in the header its format's own API reads, resolved as written in the config (a literal or `env:NAME`). Streams are server-sent events as they come;
 * error bodies are read as OpenAI and Anthropic write them (`{"error": {message, type, code}}`,
 * `{"error": "…"}` or a bare `{"message"}`), which also reads Google's `{"error": {code, message, status}}`
 * (its status name as the error's code).
 *
 * What a format needs here is one row of {@link OPERATIONS}: Gemini's is
 * `/models/{id}:generateContent` (`:streamGenerateContent?alt=sse` when streaming; a `tunedModels/…`
 * upstream id keeps its own collection) with the key in `x-goog-api-key`.
 */
import type { ProviderConfig } from '../config/types.ts';
import type { UpstreamFormat, WireFormat } from '../formats/wire.ts';
import type { Carrier, Platform, UpstreamCall, UpstreamErrorWords } from './platform.ts';

/** How one format's operation is reached on a plain HTTP server. */
interface HttpOperation {
  /** Its path (and query) under the base URL. */
  target(call: UpstreamCall): string;
  /** Puts the provider's credential where this format's API reads it. */
  credential(headers: Record<string, string>, key: string): void;
}

function bearer(headers: Record<string, string>, key: string): void {
  headers['authorization'] = `Bearer ${key}`;
}

/**
 * Gemini's resource name of an upstream id: `models/{id}`, or the id itself when it names its
 * collection (`tunedModels/…`, `models/…`). Each segment is encoded; `:` stays out of it, since
 * the method follows the last one.
 */
export function geminiModelPath(upstreamId: string): string {
  const named = upstreamId.startsWith('models/') || upstreamId.startsWith('tunedModels/');
  return (named ? upstreamId : `models/${upstreamId}`).split('/').map(encodeURIComponent).join('/');
}

const OPERATIONS: { readonly [F in WireFormat]: HttpOperation } = {
  chat: { target: () => '/chat/completions', credential: bearer },
  messages: {
    target: () => '/messages',
    credential(headers, key) {
      headers['x-api-key'] = key;
    },
  },
  responses: { target: () => '/responses', credential: bearer },
  gemini: {
    target: (call) => `/${geminiModelPath(call.upstreamId)}:${call.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
    credential(headers, key) {
      headers['x-goog-api-key'] = key;
    },
  },
};

/** The operation of a format on a plain HTTP server; Converse is Bedrock's alone (the config refuses it elsewhere). */
function operationOf(format: UpstreamFormat): HttpOperation {
  if (format === 'converse') throw new Error('the converse format is carried by the bedrock platform only');
  return OPERATIONS[format];
}

/** Headers that carry `key` the way `format`'s own API reads it (`llmux doctor` calls a provider with them). */
export function httpCredentialHeaders(format: UpstreamFormat, key: string): Record<string, string> {
  const headers: Record<string, string> = {};
  operationOf(format).credential(headers, key);
  return headers;
}

const ENV_PREFIX = 'env:';

/**
 * Where a provider's `api_key` is set, in words that never include it; with `keyIndex`, where that
 * key of its `api_keys` is.
 */
export function apiKeySetting(provider: ProviderConfig, keyIndex?: number): string {
  if (keyIndex === undefined && provider.apiKeys !== undefined) return `providers.${provider.id}.api_keys (each of its ${provider.apiKeys.length} keys)`;
  const pooled = keyIndex !== undefined && provider.apiKeys !== undefined;
  const setting = pooled ? `providers.${provider.id}.api_keys[${keyIndex}]` : `providers.${provider.id}.api_key`;
  const written = pooled ? provider.apiKeys?.[keyIndex] : provider.apiKey;
  if (written === undefined) return `${setting} (none is set)`;
  if (written.startsWith(ENV_PREFIX)) return `the environment variable ${written.slice(ENV_PREFIX.length)} (${setting})`;
  return `${setting} in the llmux config`;
}

/**
 * An error body as OpenAI and Anthropic write it: `error.message` with `type` and `code`, an
 * `error` that is a string, or a bare `message`; text that is not JSON is its own message.
 */
export function readJsonError(status: number, text: string): UpstreamErrorWords {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown; type?: unknown; code?: unknown; status?: unknown } | string; message?: unknown };
    const e = parsed.error;
    if (typeof e === 'object' && e !== null) {
      return {
        status,
        message: typeof e.message === 'string' ? e.message : '',
        type: typeof e.type === 'string' ? e.type : undefined,
        // Google's `code` is the HTTP status; its status name (`RESOURCE_EXHAUSTED`) is the code.
        code: typeof e.code === 'string' ? e.code : typeof e.status === 'string' ? e.status : undefined,
      };
    }
    if (typeof e === 'string') return { status, message: e, type: undefined, code: undefined };
    return { status, message: typeof parsed.message === 'string' ? parsed.message : '', type: undefined, code: undefined };
  } catch {
    return { status, message: text.slice(0, 500), type: undefined, code: undefined };
  }
}

export const httpPlatform: Platform = {
  name: 'http',
  bind(provider, services): Carrier {
    return {
      provider,
      endpoint: provider.baseUrl,
      credentialSetting: apiKeySetting(provider),
      target: (call) => operationOf(call.format).target(call),
      envelope: () => undefined,
      headers: (call) => ({ accept: call.stream ? 'text/event-stream' : 'application/json', ...call.formatHeaders }),
      authorise(request) {
        const key = services.secret(request.apiKey ?? provider.apiKey);
        if (key !== undefined) operationOf(request.call.format).credential(request.headers, key);
        return undefined;
      },
      events: (answer) => (String(answer.headers['content-type'] ?? '').includes('text/event-stream') ? answer : undefined),
      readError: (status, _headers, text) => readJsonError(status, text),
    };
  },
};
