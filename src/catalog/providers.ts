/**
 * The built-in upstream providers and the rules for whether one can be used right now.
 *
 * Base URLs were checked against each provider's own docs (November 2026): OpenAI, Anthropic,
 * Google's Gemini API (its native generateContent; the OpenAI-compatible surface at `/v1beta/openai`
 * is a configurable provider, docs/providers.md "Gemini"), Mistral, Groq (`/openai/v1`), DeepSeek (which also
 * accepts `/v1`), xAI, Together, Fireworks (`/inference/v1`), OpenRouter (`/api/v1`), Cerebras, and
 * Ollama's OpenAI-compatible `/v1`.
 */
import type { ProviderFormat } from '../formats/wire.ts';
import type { ProviderConfig } from '../config/types.ts';

const ENV_PREFIX = 'env:';
const OLLAMA_DEFAULT_PORT = '11434';
const LOOPBACK_V4 = '127.0.0.1';

/** Where Ollama listens when OLLAMA_HOST is unset, with its OpenAI-compatible path. */
export const OLLAMA_DEFAULT_BASE_URL = `http://${LOOPBACK_V4}:${OLLAMA_DEFAULT_PORT}/v1`;

function keyed(id: string, format: ProviderFormat, baseUrl: string, envName: string): ProviderConfig {
  return { id, format, baseUrl, apiKey: `${ENV_PREFIX}${envName}`, keyless: false, headers: {} };
}

/** The built-in providers; `env` resolves OLLAMA_HOST. */
export function builtinProviders(env: Record<string, string | undefined>): Record<string, ProviderConfig> {
  return {
    // OpenAI's base URL also serves the Responses API: Responses clients pass through.
    openai: { ...keyed('openai', 'chat', 'https://api.openai.com/v1', 'OPENAI_API_KEY'), serves: ['responses'] },
    anthropic: keyed('anthropic', 'messages', 'https://api.anthropic.com/v1', 'ANTHROPIC_API_KEY'),
    // Google's own generateContent API, where Gemini's thought signatures travel as Google wrote them.
    gemini: keyed('gemini', 'gemini', 'https://generativelanguage.googleapis.com/v1beta', 'GEMINI_API_KEY'),
    mistral: keyed('mistral', 'chat', 'https://api.mistral.ai/v1', 'MISTRAL_API_KEY'),
    groq: keyed('groq', 'chat', 'https://api.groq.com/openai/v1', 'GROQ_API_KEY'),
    deepseek: keyed('deepseek', 'chat', 'https://api.deepseek.com/v1', 'DEEPSEEK_API_KEY'),
    xai: keyed('xai', 'chat', 'https://api.x.ai/v1', 'XAI_API_KEY'),
    together: keyed('together', 'chat', 'https://api.together.xyz/v1', 'TOGETHER_API_KEY'),
    fireworks: keyed('fireworks', 'chat', 'https://api.fireworks.ai/inference/v1', 'FIREWORKS_API_KEY'),
    openrouter: keyed('openrouter', 'chat', 'https://openrouter.ai/api/v1', 'OPENROUTER_API_KEY'),
    cerebras: keyed('cerebras', 'chat', 'https://api.cerebras.ai/v1', 'CEREBRAS_API_KEY'),
    ollama: {
      id: 'ollama',
      format: 'chat',
      baseUrl: ollamaBaseUrl(env['OLLAMA_HOST']),
      apiKey: undefined,
      keyless: true,
      headers: {},
    },
  };
}

/** The credential a provider sends upstream, or undefined (resolves `env:NAME`; empty string = none). */
export function resolveApiKey(
  provider: ProviderConfig,
  env: Record<string, string | undefined>,
): string | undefined {
  return resolveSecret(provider.apiKey, env);
}

/** A secret as the config writes it: a literal, or `env:NAME` read from `env`; undefined when unset or empty. */
export function resolveSecret(written: string | undefined, env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (written === undefined || written === '') return undefined;
  if (!written.startsWith(ENV_PREFIX)) return written;
  const value = env[written.slice(ENV_PREFIX.length)];
  return value === undefined || value === '' ? undefined : value;
}

/** The values of a provider's `api_keys` that resolve now (none without `api_keys`): every one is a credential to keep out of upstream text. */
export function resolvePoolKeys(provider: ProviderConfig, env: Readonly<Record<string, string | undefined>>): string[] {
  const values: string[] = [];
  for (const written of provider.apiKeys ?? []) {
    const value = resolveSecret(written, env);
    if (value !== undefined) values.push(value);
  }
  return values;
}

/**
 * Usable now: keyless, or its credential resolves to a non-empty value (with `api_keys`: any of
 * them, llmux.md section 10).
 *
 * Decision: a provider named `ollama` still pointing at Ollama's default local address counts as
 * usable only when OLLAMA_HOST is set. Otherwise every fresh machine would list local models
 * that are not there, and each request for them would fail with a connection error instead of
 * a clean 404. Pointing `ollama` elsewhere in the config file, or any other keyless provider,
 * is taken as the user saying the server exists.
 */
export function isProviderUsable(provider: ProviderConfig, env: Record<string, string | undefined>): boolean {
  if (provider.keyless) {
    if (provider.id !== 'ollama' || provider.baseUrl !== OLLAMA_DEFAULT_BASE_URL) return true;
    const host = env['OLLAMA_HOST'];
    return host !== undefined && host.trim() !== '';
  }
  if (provider.apiKeys !== undefined) return provider.apiKeys.some((written) => resolveSecret(written, env) !== undefined);
  return resolveApiKey(provider, env) !== undefined;
}

/**
 * Ollama's OpenAI-compatible base URL for an OLLAMA_HOST value, read the way Ollama's own client
 * reads it (envconfig.Host): no scheme means http on port 11434, an explicit http/https scheme
 * without a port means 80/443, a path after the host is kept (reverse proxies), a bad port falls
 * back to the default, and an unspecified bind address (0.0.0.0, ::) is reached at loopback.
 */
export function ollamaBaseUrl(ollamaHost: string | undefined): string {
  const raw = (ollamaHost ?? '').trim();
  if (raw === '') return OLLAMA_DEFAULT_BASE_URL;
  // Ollama's own shortcut for its hosted service.
  if (raw === 'ollama.com') return 'https://ollama.com:443/v1';

  let scheme = 'http';
  let rest = raw;
  let defaultPort = OLLAMA_DEFAULT_PORT;
  const schemeEnd = raw.indexOf('://');
  if (schemeEnd !== -1) {
    const given = raw.slice(0, schemeEnd).toLowerCase();
    rest = raw.slice(schemeEnd + 3);
    if (given === 'https') {
      scheme = 'https';
      defaultPort = '443';
    } else if (given === 'http') {
      defaultPort = '80';
    }
    // Any other scheme cannot be fetched; Ollama would keep it, we fall back to plain http.
  }

  const slash = rest.indexOf('/');
  const hostPort = slash === -1 ? rest : rest.slice(0, slash);
  const path = slash === -1 ? '' : rest.slice(slash + 1).replace(/\/+$/, '');

  let host: string;
  let port: string;
  const split = splitHostPort(hostPort);
  if (split === undefined) {
    host = hostPort.replace(/^\[|\]$/g, '');
    port = defaultPort;
  } else {
    ({ host, port } = split);
  }
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) port = defaultPort;
  if (host === '' || host === '0.0.0.0') host = LOOPBACK_V4;
  else if (host === '::' || host === '[::]') host = '::1';

  const hostPart = host.includes(':') ? `[${host}]` : host;
  return `${scheme}://${hostPart}:${port}${path === '' ? '' : `/${path}`}/v1`;
}

/** Go's net.SplitHostPort: `host:port` or `[v6]:port`; undefined when there is no single port. */
function splitHostPort(hostPort: string): { host: string; port: string } | undefined {
  if (hostPort.startsWith('[')) {
    const close = hostPort.indexOf(']');
    if (close === -1 || hostPort[close + 1] !== ':') return undefined;
    return { host: hostPort.slice(1, close), port: hostPort.slice(close + 2) };
  }
  const colon = hostPort.indexOf(':');
  if (colon === -1 || hostPort.indexOf(':', colon + 1) !== -1) return undefined;
  return { host: hostPort.slice(0, colon), port: hostPort.slice(colon + 1) };
}
