/**
 * Provider credentials out of upstream text. An upstream that echoes the credential it was sent
 * (in an error message, an error code, an in-stream error event) must not hand it to a client or
 * to the log, so every piece of upstream text that llmux passes on goes through one function,
 * made once from every configured credential: the upstream's error messages and codes
 * (./upstream-errors.ts), its in-stream error events passed through or translated
 * (src/relay/relays.ts), and what the pipeline quotes of its headers.
 *
 * What counts as a credential: each provider's resolved `api_key`, and the values of its extra
 * `headers` whose names say they carry one (`authorization`, or a name holding `key`, `token`,
 * `secret`, `password`, `auth`), a `Bearer` value also without its scheme. Each is also looked for
 * JSON-escaped and URL-encoded. Every occurrence becomes `[redacted]`, longest credential first.
 * Model answers themselves (text a model wrote) are not searched.
 */
import type { ProviderConfig } from '../config/types.ts';

/** Upstream text with every configured credential replaced. */
export type Redact = (text: string) => string;

export const REDACTED = '[redacted]';

const CREDENTIAL_HEADER = /key|token|secret|password|auth/i;
const BEARER = /^bearer\s+/i;

/** The credential values of `providers`: resolved API keys and credential-carrying headers. */
export function credentialsOf(providers: Iterable<ProviderConfig>, apiKey: (provider: ProviderConfig) => string | undefined): string[] {
  const values: string[] = [];
  for (const provider of providers) {
    const key = apiKey(provider);
    if (key !== undefined) values.push(key);
    for (const [name, value] of Object.entries(provider.headers)) {
      if (!CREDENTIAL_HEADER.test(name)) continue;
      values.push(value);
      if (BEARER.test(value)) values.push(value.replace(BEARER, ''));
    }
  }
  return values;
}

/** Makes the one redacting function from credential values (empty ones are ignored). */
export function createRedactor(credentials: Iterable<string>): Redact {
  const needles = new Set<string>();
  for (const raw of credentials) {
    const value = raw.trim();
    if (value === '') continue;
    const escaped = JSON.stringify(value).slice(1, -1);
    needles.add(value);
    needles.add(escaped);
    // JSON may also escape "/", and some servers do.
    needles.add(escaped.replaceAll('/', '\\/'));
    needles.add(encodeURIComponent(value));
  }
  // Longest first, so a credential that contains another is replaced whole.
  const sorted = [...needles].sort((a, b) => b.length - a.length);
  if (sorted.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const needle of sorted) {
      if (out.includes(needle)) out = out.split(needle).join(REDACTED);
    }
    return out;
  };
}

/**
 * `redact`, also taking out the secrets a platform learns while llmux runs (OAuth access tokens,
 * temporary AWS credentials, a signed assertion: src/platforms/ `secrets`), read by `current()` on
 * each call; their needles are rebuilt only when that list changes.
 */
export function withLearnedSecrets(redact: Redact, current: () => readonly string[]): Redact {
  let known: string | undefined;
  let learned: Redact = (text) => text;
  return (text) => {
    const values = current();
    const signature = values.join('\n');
    if (signature !== known) {
      known = signature;
      learned = createRedactor(values);
    }
    return learned(redact(text));
  };
}
