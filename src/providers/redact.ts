/**
 * Provider credentials out of what reaches a client or the log. An upstream that echoes the
 * credential it was sent (in an error message, an in-stream error, a model's text) must not hand
 * it on, so every piece of upstream text llmux passes on goes through one redactor, made once from
 * every configured credential and taught more at run time (`learn`: cloud platforms register AWS
 * secret keys, session tokens, OAuth tokens, private keys and assertions as they get them): error
 * messages and codes (./upstream-errors.ts), streams passed through or translated and whole
 * answers (src/relay/), forwarded reads (./forward.ts), and the request log.
 *
 * What counts as a credential: each provider's resolved `api_key`, and the values of its extra
 * `headers` whose names say they carry one (`authorization`, or a name holding `key`, `token`,
 * `secret`, `password`, `auth`), a `Bearer` value also without its scheme; and what `learn` is given.
 *
 * What is found is what the client sees after decoding (issue 25: an upstream echoing the
 * credential JSON-escaped, `\u0073k-…`, URL-encoded, `%2D`, base64-encoded, or cut by a
 * character reached the client in plain text):
 * - the text is read through its JSON string escapes (`\uXXXX`, `\/`, …) and URL escapes (`%XX`),
 *   mixed as they may be; a match is replaced in the text as written, escapes and all;
 * - each credential is looked for as itself and base64-encoded (standard and URL alphabets, at
 *   each of the three byte alignments it can have inside a longer base64 text);
 * - for one of {@link MIN_RUN} characters or more, any run of {@link MIN_RUN} or more of its
 *   characters in a row is a match: a prefix (the credential cut short), the credential without its
 *   first character, any long piece of it. Found by looking up every eighth 8-byte piece of the
 *   text in a table of every 8-byte piece of every credential (a run of 16 always holds one), then
 *   extending a hit both ways: about one table look-up per 8 bytes, however many credentials;
 * - a shorter credential is matched whole, and one under {@link MIN_SECRET} characters not at all
 *   (a placeholder such as `ollama` for a local server, which answers may well mention);
 * - a secret with whitespace in it (a PEM private key) counts as its pieces of {@link MIN_RUN}
 *   characters or more (the lines of its base64 body).
 * Every match becomes `[redacted]`. A credential a model spells out across several stream events
 * (a token at a time) is not caught: each event is redacted on its own.
 */
import type { ProviderConfig } from '../config/types.ts';

/** Upstream text with every known credential replaced. */
export type Redact = (text: string) => string;

/** The redactor: redacts text and bytes, and learns more secrets at run time. */
export interface Redactor extends Redact {
  /** Bytes (UTF-8 text) with every known credential replaced; the same Buffer when there was none. */
  bytes(bytes: Buffer): Buffer;
  /** From now on, `secret` is redacted too (empty and already-known secrets are ignored). */
  learn(secret: string): void;
}

/**
 * Bytes with every credential `redact` knows replaced; the same Buffer when there was none. (An
 * in-process provider's body may be a string at run time, whatever its type says: it is taken too.)
 */
export function redactBytes(redact: Redact, bytes: Buffer): Buffer {
  const data = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes as unknown as string);
  const native = (redact as Partial<Redactor>).bytes;
  if (native !== undefined) return native(data);
  const text = data.toString('utf8');
  const clean = redact(text);
  return clean === text ? data : Buffer.from(clean);
}

export const REDACTED = '[redacted]';
/** Shortest run of a long credential's characters that counts as the credential. */
export const MIN_RUN = 16;
/** Shortest value redacted at all. */
export const MIN_SECRET = 8;

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

/** The forms a secret is looked for in (after decoding): itself, and base64 at each alignment. */
function formsOf(secret: string): string[] {
  const forms = new Set<string>([secret]);
  const bytes = Buffer.from(secret, 'utf8');
  for (let align = 0; align < 3; align++) {
    const encoded = Buffer.concat([Buffer.alloc(align), bytes]).toString('base64');
    // Only the characters made of the secret's bits alone, whatever surrounds it.
    const core = encoded.slice(Math.ceil((8 * align) / 6), Math.floor((8 * (align + bytes.length)) / 6));
    if (core.length === 0) continue;
    forms.add(core);
    forms.add(core.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return [...forms];
}

/** Bytes of a piece looked up at once, and how far apart the pieces looked up are. */
const GRAM = 8;
const STEP = 8;
// A run of MIN_RUN bytes always holds a whole piece that starts at a multiple of STEP.
if (GRAM + STEP - 1 > MIN_RUN) throw new Error('redact: a run of MIN_RUN must hold a looked-up piece');
const HASH_MASK = 0x3fffffff;
/** Bits of the hash a filter slot is picked by (a byte per slot: 64 KiB). */
const FILTER_MASK = 0xffff;

/** The hash of the GRAM bytes at `at`, taken as two 32-bit words. */
function gramHash(data: Uint8Array, at: number): number {
  const low = (data[at] as number) | ((data[at + 1] as number) << 8) | ((data[at + 2] as number) << 16) | ((data[at + 3] as number) << 24);
  const high = (data[at + 4] as number) | ((data[at + 5] as number) << 8) | ((data[at + 6] as number) << 16) | ((data[at + 7] as number) << 24);
  return (Math.imul(low, 0x9e3779b1) ^ Math.imul(high, 0x85ebca77)) & HASH_MASK;
}

/** A piece of a long form: where it starts in the form. */
interface Piece { form: Uint8Array; at: number }

/** What is looked for, built from the known secrets. */
interface Index {
  /** Every GRAM-byte piece of every long form, by its hash. */
  pieces: Map<number, Piece[]>;
  /** 1 where some piece's hash has those low bits: most look-ups stop here. */
  filter: Uint8Array;
  /** Forms shorter than MIN_RUN, matched whole. */
  short: Buffer[];
}

function buildIndex(secrets: Iterable<string>): Index {
  const pieces = new Map<number, Piece[]>();
  const filter = new Uint8Array(FILTER_MASK + 1);
  const short: Buffer[] = [];
  const seen = new Set<string>();
  for (const secret of secrets) {
    for (const text of formsOf(secret)) {
      if (seen.has(text)) continue;
      seen.add(text);
      const form = Buffer.from(text, 'utf8');
      if (form.length < MIN_RUN) {
        short.push(form);
        continue;
      }
      for (let at = 0; at + GRAM <= form.length; at++) {
        const h = gramHash(form, at);
        filter[h & FILTER_MASK] = 1;
        const list = pieces.get(h);
        if (list === undefined) pieces.set(h, [{ form, at }]);
        else list.push({ form, at });
      }
    }
  }
  return { pieces, filter, short };
}

/** Text as the client reads it after its JSON and URL escapes (bytes; a character past ASCII as 0), and where each byte came from. */
interface View {
  data: Uint8Array;
  /** Source offset of each byte of `data`, and the source's length last; undefined: the bytes are their own view. */
  from: Int32Array | undefined;
}

const BACKSLASH = 0x5c;
const PERCENT = 0x25;
const U = 0x75;
const SLASH = 0x2f;

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x57 : -1;
}

function hexAt(data: Uint8Array, at: number, digits: number): number {
  if (at + digits > data.length) return -1;
  let value = 0;
  for (let k = at; k < at + digits; k++) {
    const d = hexDigit(data[k] as number);
    if (d < 0) return -1;
    value = value * 16 + d;
  }
  return value;
}

/** Whether `data` holds an escape that could hide a credential's character (`\n`, `\"` cannot). */
function mayHide(data: Buffer): boolean {
  for (let at = data.indexOf(PERCENT); at !== -1; at = data.indexOf(PERCENT, at + 1)) if (hexAt(data, at + 1, 2) >= 0) return true;
  for (let at = data.indexOf(BACKSLASH); at !== -1 && at + 1 < data.length; at = data.indexOf(BACKSLASH, at + 2)) {
    const next = data[at + 1];
    if ((next === U && hexAt(data, at + 2, 4) >= 0) || next === SLASH) return true;
  }
  return false;
}

/** What a JSON escape `\\X` stands for, by X; 0 for none. */
const SIMPLE_ESCAPES = new Uint8Array(128);
for (const [escape, stands] of [[0x22, 0x22], [0x5c, 0x5c], [0x2f, 0x2f], [0x62, 0x08], [0x66, 0x0c], [0x6e, 0x0a], [0x72, 0x0d], [0x74, 0x09]] as const) SIMPLE_ESCAPES[escape] = stands;

/** The decoded view of `data` (itself when it holds no escape that could hide a character). */
function viewOf(data: Buffer): View {
  if (!mayHide(data)) return { data, from: undefined };
  const out = new Uint8Array(data.length);
  const from = new Int32Array(data.length + 1);
  let length = 0;
  let i = 0;
  while (i < data.length) {
    const c = data[i] as number;
    from[length] = i;
    let width = 1;
    let decoded = c;
    if (c === BACKSLASH && i + 1 < data.length) {
      const next = data[i + 1] as number;
      const code = next === U ? hexAt(data, i + 2, 4) : -1;
      if (code >= 0) {
        decoded = code < 0x80 ? code : 0;
        width = 6;
      } else if (next < 0x80 && SIMPLE_ESCAPES[next] !== 0) {
        decoded = SIMPLE_ESCAPES[next] as number;
        width = 2;
      }
    } else if (c === PERCENT) {
      const code = hexAt(data, i + 1, 2);
      if (code >= 0) {
        decoded = code < 0x80 ? code : 0;
        width = 3;
      }
    }
    out[length++] = decoded;
    i += width;
  }
  from[length] = data.length;
  return { data: out.subarray(0, length), from: from.subarray(0, length + 1) };
}

/** Where `needle` occurs in `data`, each [start, end). */
function occurrences(data: Uint8Array, needle: Buffer, runs: Array<[number, number]>): void {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.length);
  for (let at = bytes.indexOf(needle); at !== -1; at = bytes.indexOf(needle, at + needle.length)) runs.push([at, at + needle.length]);
}

/** Runs [start, end) of the view that are credentials, in order; they may overlap. */
function findRuns(data: Uint8Array, index: Index): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  for (const form of index.short) occurrences(data, form, runs);
  if (index.pieces.size === 0) return runs;
  const { filter, pieces } = index;
  const last = data.length - GRAM;
  for (let i = 0; i <= last; i += STEP) {
    const h = gramHash(data, i);
    if (filter[h & FILTER_MASK] === 0) continue;
    const candidates = pieces.get(h);
    if (candidates === undefined) continue;
    let furthest = i;
    for (const { form, at } of candidates) {
      let same = 0;
      while (same < GRAM && data[i + same] === form[at + same]) same++;
      if (same < GRAM) continue;
      // Extend the piece to everything around it that goes on matching the form.
      let left = 0;
      while (at - left > 0 && i - left > 0 && data[i - left - 1] === form[at - left - 1]) left++;
      let right = GRAM;
      while (at + right < form.length && i + right < data.length && data[i + right] === form[at + right]) right++;
      if (left + right < MIN_RUN) continue;
      runs.push([i - left, i + right]);
      furthest = Math.max(furthest, i + right);
    }
    // Pieces wholly inside a run found are found again: go on past it.
    if (furthest > i + GRAM) i = Math.max(i, (Math.floor((furthest - GRAM) / STEP) - 1) * STEP);
  }
  return runs;
}

const REDACTED_BYTES = Buffer.from(REDACTED);

function redactWith(data: Buffer, index: Index): Buffer {
  const view = viewOf(data);
  const runs = findRuns(view.data, index);
  if (runs.length === 0) return data;
  runs.sort((a, b) => a[0] - b[0]);
  const source = (at: number): number => (view.from === undefined ? at : view.from[at] as number);
  const out: Buffer[] = [];
  let copied = 0;
  let runStart = -1;
  let runEnd = -1;
  const flush = (): void => {
    if (runStart < 0) return;
    out.push(data.subarray(copied, source(runStart)), REDACTED_BYTES);
    copied = source(runEnd);
  };
  for (const [start, end] of runs) {
    if (start <= runEnd) {
      runEnd = Math.max(runEnd, end);
      continue;
    }
    flush();
    runStart = start;
    runEnd = end;
  }
  flush();
  out.push(data.subarray(copied));
  return Buffer.concat(out);
}

/**
 * What a secret is learned as: itself, or its long pieces when it has whitespace in it (a PEM key).
 * A value shorter than {@link MIN_SECRET} is a placeholder (`ollama`, `none`, `x`), not a secret:
 * taking every `x` out of every answer would protect nothing and break the answers.
 */
function secretsIn(raw: string): string[] {
  const secret = typeof raw === 'string' ? raw.trim() : '';
  if (secret.length < MIN_SECRET) return [];
  if (!/\s/.test(secret)) return [secret];
  return secret.split(/\s+/).filter((piece) => piece.length >= MIN_RUN);
}

/**
 * Secrets learned at run time that are kept: tokens and temporary credentials are renewed (an
 * access token every hour, a container credential every few), so what a platform learns is bounded
 * by dropping the least recently told. A secret that drops out has long expired; a configured
 * credential is never dropped.
 */
const MAX_LEARNED_SECRETS = 64;

/** Makes the one redactor from credential values (empty ones are ignored). */
export function createRedactor(credentials: Iterable<string>): Redactor {
  const configured = new Set<string>();
  /** Learned secrets, least recently told first. */
  const learned = new Map<string, true>();
  let index: Index | undefined;
  for (const credential of credentials) for (const secret of secretsIn(credential)) configured.add(secret);
  const learn = (raw: string): void => {
    for (const secret of secretsIn(raw)) {
      if (configured.has(secret)) continue;
      if (learned.delete(secret)) {
        learned.set(secret, true);
        continue;
      }
      learned.set(secret, true);
      if (learned.size > MAX_LEARNED_SECRETS) learned.delete(learned.keys().next().value as string);
      index = undefined;
    }
  };
  const secrets = (): Set<string> => new Set([...configured, ...learned.keys()]);
  const current = (): Index | undefined => {
    if (configured.size === 0 && learned.size === 0) return undefined;
    index ??= buildIndex(secrets());
    return index;
  };
  const bytes = (data: Buffer): Buffer => {
    const known = current();
    return known === undefined || data.length === 0 ? data : redactWith(data, known);
  };
  const redact = (text: string): string => {
    if (current() === undefined || text.length === 0) return text;
    const data = Buffer.from(text, 'utf8');
    const clean = bytes(data);
    // Matches are ASCII bytes, so what is cut out never splits a character.
    return clean === data ? text : clean.toString('utf8');
  };
  return Object.assign(redact, { bytes, learn });
}
