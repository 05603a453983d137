/**
 * Which upstreams can read the opaque state a provider issues (llmux.md section 11): state goes
 * back only to a provider of the family that issued it, and is stripped on the way to any other.
 */
import type { ProviderConfig } from '../config/types.ts';

/** Hosts whose providers share a family of opaque state (llmux.md section 11). */
const FAMILY_OF_HOST: ReadonlyMap<string, string> = new Map([
  ['generativelanguage.googleapis.com', 'gemini'],
  ['openrouter.ai', 'openrouter'],
  ['api.openai.com', 'openai'],
]);

/**
 * Which upstreams can read the opaque state a provider issues (llmux.md section 11): the config's
 * `family`; else `anthropic` for the messages format on any platform (Anthropic's signatures hold
 * across its API, Bedrock and Vertex AI), `gemini` for the Gemini format on any platform and for
 * Google's OpenAI-compatible surfaces (its API's and Vertex AI's), `openrouter` for OpenRouter,
 * `openai` for OpenAI and Azure OpenAI; else the provider alone (`provider:ID`): its state goes
 * back to it only.
 */
export function familyOf(provider: ProviderConfig): string {
  let family = FAMILIES.get(provider);
  if (family === undefined) {
    family = familyOfConfig(provider);
    FAMILIES.set(provider, family);
  }
  return family;
}

/**
 * Each provider's family, worked out once: it is a function of the provider's config, which does
 * not change while the object lives, and every request asks (parsing the base URL is most of it).
 */
const FAMILIES = new WeakMap<ProviderConfig, string>();

function familyOfConfig(provider: ProviderConfig): string {
  if (provider.family !== undefined) return provider.family;
  if (provider.format === 'messages') return 'anthropic';
  if (provider.format === 'gemini') return 'gemini';
  if (provider.platform === 'vertex') return 'gemini';
  if (provider.platform === 'azure') return 'openai';
  let host: string;
  try {
    host = new URL(provider.baseUrl).hostname;
  } catch {
    host = '';
  }
  return FAMILY_OF_HOST.get(host) ?? `provider:${provider.id}`;
}
