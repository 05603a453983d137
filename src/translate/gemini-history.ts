/**
 * Reading a Gemini client's `systemInstruction` and `contents` for a chat or messages upstream
 * (llmux.md section 9): one reader, whose turns ./gemini-to-chat.ts and ./gemini-to-messages.ts
 * each write in their format. Everything is read leniently, as the other translators read; what
 * cannot go on is dropped with a warning, never thrown.
 *
 * Decisions where the spec is silent:
 * - Turns: `model` is the assistant, anything else the user. Consecutive contents of one role are
 *   merged (the SDK's chat keeps each streamed chunk as its own turn), and within a model turn
 *   adjacent text (and thought) pieces are joined with "" since they are fragments of one answer.
 * - Function calls keep the client's `id`. One without an id is given `call_` + a hash of its name,
 *   arguments and how many identical calls came before: deterministic, so the same history gives
 *   the same ids every turn (prompt caches need the same prefix), and stable when a client
 *   compresses older turns away. An id a chat or messages upstream would refuse (Anthropic wants
 *   `[A-Za-z0-9_-]`, OpenAI at most 40 characters; Gemini CLI writes `name__name_<ms>_<n>`) is sent
 *   as `call_` + a hash of it, the same every time.
 * - Function responses are matched to their call by `id`, else to the earliest unanswered call of
 *   the same name. One that matches no call (an upstream refuses a result nothing called) is sent
 *   as user text naming the function, with a warning.
 * - Function names a chat or messages upstream refuses (Gemini allows `.` and `:` and 128
 *   characters, they allow `[A-Za-z0-9_-]{1,64}`) are sent cut, with those characters as `_` and a
 *   short stable hash; {@link geminiToolNames} maps them back for the answer.
 * - Media: `inlineData` images, PDFs and audio go on as media; `text/*` data is decoded to text;
 *   `fileData` with a public http(s) URL of an image or a PDF goes on as a URL. Other files (Google
 *   Files API and Cloud Storage URIs, YouTube, video, unknown types) cannot be fetched or read by
 *   the upstream: a placeholder `[file omitted: …]` stands in their place, with a warning.
 * - `executableCode` / `codeExecutionResult` (Google's code execution, replayed in history) become
 *   model text: a fenced code block and its output. Server-side `toolCall` / `toolResponse` parts
 *   and parts of kinds newer than this file are dropped with a warning.
 * - `thought: true` parts are kept as thoughts for the writer to replay or drop. A `thoughtSignature`
 *   (llmux.md section 11) is an llmux seal of what an earlier translated answer carried
 *   (./gemini-encoder.ts): opened by the carry reader, its pieces are `carried` items for the
 *   writer to put back when the upstream is of their issuer's family. Google's own signature on a
 *   call is that call's Gemini state: kept for a Gemini upstream, counted as stripped for any
 *   other; on any other part it is dropped without a word (every Gemini answer carries some, and
 *   only calls need theirs back).
 */
import { createHash } from 'node:crypto';
import type { GeminiRequest } from '../formats/gemini-types.ts';
import { isLlmuxSeal } from '../formats/responses.ts';
import { asRecord, records } from '../common/json.ts';
import { truncate } from '../common/errors.ts';
import { type CarriedItem, type CarryReader, GEMINI_FAMILY, unbundled } from './carried.ts';

/** An image, a PDF or a sound, by its bytes (base64) or by a public URL. */
export type GeminiMedia =
  | { type: 'image' | 'document' | 'audio'; mimeType: string; data: string }
  | { type: 'image' | 'document'; mimeType: string; url: string };

export type HistoryItem =
  | { kind: 'text'; text: string }
  | { kind: 'media'; media: GeminiMedia }
  | { kind: 'call'; id: string; name: string; args: Record<string, unknown> }
  | { kind: 'result'; id: string; name: string; response: Record<string, unknown>; media: GeminiMedia[] }
  | { kind: 'thought'; text: string }
  /** A piece of state the conversation carried, which the upstream may be sent (a call's names the call by its upstream id). */
  | { kind: 'carried'; item: CarriedItem };

export interface HistoryTurn { role: 'user' | 'model'; items: HistoryItem[] }

export interface GeminiHistory {
  /** The system instruction's text parts, joined with a blank line. */
  system: string;
  turns: HistoryTurn[];
}

export interface HistoryOptions {
  warn: (message: string) => void;
  /** Opens and sorts the signatures' state for the upstream (./carried.ts); absent: none is kept. */
  carry?: CarryReader | undefined;
}

/** Who issued a Gemini client's own (not llmux's) signature, for the carry reader. */
const GOOGLE = { provider: 'google (a signature the Gemini client kept)', family: GEMINI_FAMILY };

const PARAGRAPH = '\n\n';
const UPSTREAM_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const UPSTREAM_ID = /^[A-Za-z0-9_-]{1,40}$/;
const REFUSED_NAME_CHARS = /[^A-Za-z0-9_-]/g;
const HASH_CHARS = 8;
const HTTP_URL = /^https?:\/\//i;
/** Files behind Google's own APIs: nobody else can fetch them. */
const GOOGLE_FILE_HOSTS = /^https?:\/\/(generativelanguage\.googleapis\.com|[^/]*\.?youtube\.com|youtu\.be)\//i;

function hash(...pieces: string[]): string {
  const digest = createHash('sha256');
  for (const piece of pieces) digest.update(piece).update('\u0000');
  return digest.digest('hex');
}

/** A function name as chat and messages upstreams take it: unchanged when they take it, else cut with a stable hash. */
export function upstreamToolName(name: string): string {
  if (UPSTREAM_NAME.test(name)) return name;
  return `${name.replace(REFUSED_NAME_CHARS, '_').slice(0, 64 - HASH_CHARS - 1)}_${hash(name).slice(0, HASH_CHARS)}`;
}

/** A call id as chat and messages upstreams take it: unchanged when they take it, else `call_` + a stable hash. */
export function upstreamCallId(id: string): string {
  return UPSTREAM_ID.test(id) ? id : `call_${hash(id).slice(0, 24)}`;
}

/**
 * The request's function names that went upstream under another name: upstream name -> the
 * client's. What an answer translator needs to name a call the way the client declared it.
 */
export function geminiToolNames(request: GeminiRequest): ReadonlyMap<string, string> {
  const names = new Map<string, string>();
  for (const tool of records(request.tools)) {
    for (const declaration of records(tool['functionDeclarations'])) {
      const name = declaration['name'];
      if (typeof name === 'string' && upstreamToolName(name) !== name) names.set(upstreamToolName(name), name);
    }
  }
  return names;
}

/** The text of a function response as a tool result: its `output` (or `error`) when that is all it says, else its JSON. */
export function functionResponseText(response: Record<string, unknown>): { text: string; isError: boolean } {
  const keys = Object.keys(response).filter((key) => key !== 'name');
  const only = keys.length === 1 ? keys[0] : undefined;
  const error = response['error'];
  if (error !== undefined && error !== null) return { text: typeof error === 'string' ? error : JSON.stringify(error), isError: true };
  // `output` is Google's documented key (Gemini CLI's); `content` is `@ai-sdk/google`'s, `result` common in samples.
  if (only === 'output' || only === 'content' || only === 'result') {
    const value = response[only];
    return { text: typeof value === 'string' ? value : JSON.stringify(value), isError: false };
  }
  return { text: keys.length === 0 ? '' : JSON.stringify(response), isError: false };
}

interface Call { clientId: string | undefined; id: string; name: string; answered: boolean }

/** Reads the request's system instruction and contents into turns (see the file header). */
export function readGeminiHistory(request: GeminiRequest, options: HistoryOptions): GeminiHistory {
  const { warn } = options;
  const systemTexts: string[] = [];
  records(asRecord(request.systemInstruction)?.['parts']).forEach((part, index) => {
    if (typeof part['text'] === 'string') {
      if (part['text'] !== '') systemTexts.push(part['text']);
    } else {
      warn(`systemInstruction.parts.${index}: dropped, only text can be a system prompt for this model's upstream`);
    }
  });

  const turns: HistoryTurn[] = [];
  const calls: Call[] = [];
  const identical = new Map<string, number>();
  records(request.contents).forEach((content, contentIndex) => {
    const role = content['role'] === 'model' ? 'model' : 'user';
    let turn = turns[turns.length - 1];
    if (turn === undefined || turn.role !== role) {
      turn = { role, items: [] };
      turns.push(turn);
    }
    const items = turn.items;
    records(content['parts']).forEach((part, partIndex) => {
      const path = `contents.${contentIndex}.parts.${partIndex}`;
      const signature = part['thoughtSignature'];
      const sealed = typeof signature === 'string' && role === 'model' && isLlmuxSeal(signature) ? openSeal(signature, options.carry) : [];
      if (typeof part['text'] === 'string') {
        pushCarried(items, sealed, undefined);
        if (part['text'] !== '') pushText(items, role, part['thought'] === true ? 'thought' : 'text', part['text'], '');
        return;
      }
      if (part['thought'] === true) return pushCarried(items, sealed, undefined);
      const call = asRecord(part['functionCall']);
      if (call !== undefined) {
        if (role !== 'model') return warn(`${path}: dropped, a function call belongs in a model turn`);
        const name = typeof call['name'] === 'string' ? call['name'] : '';
        const args = asRecord(call['args']) ?? {};
        const clientId = typeof call['id'] === 'string' && call['id'] !== '' ? call['id'] : undefined;
        let id: string;
        if (clientId !== undefined) {
          id = upstreamCallId(clientId);
        } else {
          const key = `${name}\u0000${JSON.stringify(args)}`;
          const ordinal = identical.get(key) ?? 0;
          identical.set(key, ordinal + 1);
          id = `call_${hash(name, JSON.stringify(args), String(ordinal)).slice(0, 24)}`;
        }
        calls.push({ clientId, id, name, answered: false });
        pushCarried(items, sealed, { clientId, id });
        if (typeof signature === 'string' && signature !== '' && !isLlmuxSeal(signature) && options.carry?.accept(GOOGLE) === true) {
          items.push({ kind: 'carried', item: { kind: 'thought-signature', signature, callId: id } });
        }
        items.push({ kind: 'call', id, name: upstreamToolName(name), args });
        return;
      }
      pushCarried(items, sealed, undefined);
      const response = asRecord(part['functionResponse']);
      if (response !== undefined) return readResponse(response, path, calls, items, warn);
      const inline = asRecord(part['inlineData']);
      if (inline !== undefined) return pushInline(inline, path, items, warn);
      const file = asRecord(part['fileData']);
      if (file !== undefined) return pushFile(file, path, items, warn);
      const code = asRecord(part['executableCode']);
      if (code !== undefined) {
        const language = typeof code['language'] === 'string' && code['language'] !== 'LANGUAGE_UNSPECIFIED' ? code['language'].toLowerCase() : '';
        pushText(items, role, 'text', `\`\`\`${language}\n${typeof code['code'] === 'string' ? code['code'] : ''}\n\`\`\``, PARAGRAPH);
        return;
      }
      const result = asRecord(part['codeExecutionResult']);
      if (result !== undefined) {
        const outcome = typeof result['outcome'] === 'string' ? ` (${result['outcome']})` : '';
        pushText(items, role, 'text', `Code execution result${outcome}:\n${typeof result['output'] === 'string' ? result['output'] : ''}`, PARAGRAPH);
        return;
      }
      const kind = Object.keys(part).find((key) => key !== 'thoughtSignature' && key !== 'thought') ?? 'empty';
      warn(`${path}: dropped, this model's upstream has nothing for a ${truncate(kind, 100)} part`);
    });
  });
  // A turn can be left with nothing (only a signature, dropped parts): it says nothing, and the
  // turns on either side of it are one.
  const kept: HistoryTurn[] = [];
  for (const turn of turns) {
    if (turn.items.length === 0) continue;
    const last = kept[kept.length - 1];
    if (last !== undefined && last.role === turn.role) last.items.push(...turn.items);
    else kept.push(turn);
  }
  return { system: systemTexts.join(PARAGRAPH), turns: kept };
}

/** The pieces of state a seal holds, when it opens for this key and the upstream may be sent them. */
function openSeal(sealed: string, carry: CarryReader | undefined): CarriedItem[] {
  const opened = carry?.unseal(sealed);
  const pieces = opened === undefined ? [] : unbundled(opened.item);
  // A seal that holds nothing says only who answered: nothing to put back or strip.
  return opened !== undefined && pieces.length > 0 && carry?.accept(opened.issuer) === true ? pieces : [];
}

/**
 * Adds a seal's pieces to the turn. On a call (`call`), a thought signature that names the call by
 * the client's id names it by the id the upstream gets.
 */
function pushCarried(items: HistoryItem[], pieces: readonly CarriedItem[], call: { clientId: string | undefined; id: string } | undefined): void {
  for (const piece of pieces) {
    const renamed = call !== undefined && piece.kind === 'thought-signature' && piece.callId !== undefined && piece.callId === call.clientId ? { ...piece, callId: call.id } : piece;
    items.push({ kind: 'carried', item: renamed });
  }
}

/**
 * Adds text to the turn: in a model turn, onto the text (or thought) just before it, with
 * `separator` (stream fragments take none); otherwise as an item of its own.
 */
function pushText(items: HistoryItem[], role: 'user' | 'model', kind: 'text' | 'thought', text: string, separator: string): void {
  const last = items[items.length - 1];
  if (role === 'model' && last !== undefined && last.kind === kind) last.text += separator + text;
  else items.push({ kind, text });
}

function readResponse(response: Record<string, unknown>, path: string, calls: Call[], items: HistoryItem[], warn: (message: string) => void): void {
  const name = typeof response['name'] === 'string' ? response['name'] : '';
  const clientId = typeof response['id'] === 'string' && response['id'] !== '' ? response['id'] : undefined;
  const call = (clientId === undefined ? undefined : calls.find((candidate) => candidate.clientId === clientId))
    ?? calls.find((candidate) => !candidate.answered && candidate.name === name);
  const body = asRecord(response['response']) ?? {};
  const media: GeminiMedia[] = [];
  records(response['parts']).forEach((part, index) => {
    const inline = asRecord(part['inlineData']);
    const placed: HistoryItem[] = [];
    if (inline !== undefined) pushInline(inline, `${path}.functionResponse.parts.${index}`, placed, warn);
    const file = asRecord(part['fileData']);
    if (file !== undefined) pushFile(file, `${path}.functionResponse.parts.${index}`, placed, warn);
    for (const item of placed) if (item.kind === 'media') media.push(item.media);
  });
  if (call === undefined) {
    warn(`${path}: answers a call of "${truncate(name, 100)}" that is not in the contents; sent as user text`);
    const { text } = functionResponseText(body);
    items.push({ kind: 'text', text: `Output of function ${name}:\n${text}` });
    for (const item of media) items.push({ kind: 'media', media: item });
    return;
  }
  call.answered = true;
  items.push({ kind: 'result', id: call.id, name: upstreamToolName(call.name), response: body, media });
}

function pushInline(blob: Record<string, unknown>, path: string, items: HistoryItem[], warn: (message: string) => void): void {
  const mimeType = typeof blob['mimeType'] === 'string' ? blob['mimeType'].toLowerCase() : '';
  const data = typeof blob['data'] === 'string' ? blob['data'] : '';
  const type = mediaType(mimeType);
  if (type !== undefined) {
    items.push({ kind: 'media', media: { type, mimeType, data } });
  } else if (mimeType.startsWith('text/')) {
    items.push({ kind: 'text', text: Buffer.from(data, 'base64').toString('utf8') });
  } else {
    warn(`${path}.inlineData: dropped, this model's upstream cannot read ${truncate(mimeType, 100) || 'data of no type'}`);
    items.push({ kind: 'text', text: `[file omitted: this model cannot read ${truncate(mimeType, 100) || 'it'}]` });
  }
}

function pushFile(file: Record<string, unknown>, path: string, items: HistoryItem[], warn: (message: string) => void): void {
  const uri = typeof file['fileUri'] === 'string' ? file['fileUri'] : '';
  const mimeType = typeof file['mimeType'] === 'string' ? file['mimeType'].toLowerCase() : '';
  const type = mediaType(mimeType);
  if (HTTP_URL.test(uri) && !GOOGLE_FILE_HOSTS.test(uri) && (type === 'image' || type === 'document')) {
    items.push({ kind: 'media', media: { type, mimeType, url: uri } });
    return;
  }
  // The URI stays out of the log line: it is the client's content, and may be a signed link.
  warn(`${path}.fileData: dropped, this model's upstream cannot fetch ${mimeType === '' ? 'this file' : `a ${truncate(mimeType, 100)} file`} from where it is`);
  items.push({ kind: 'text', text: `[file omitted: ${truncate(uri, 200)} cannot be fetched by this model]` });
}

function mediaType(mimeType: string): 'image' | 'document' | 'audio' | undefined {
  if (mimeType.startsWith('image/')) return 'image';
  if (mimeType === 'application/pdf') return 'document';
  if (mimeType.startsWith('audio/')) return 'audio';
  return undefined;
}

/** Whether the last turn answers calls (a tool loop continues) rather than starting one. */
export function continuesToolLoop(history: GeminiHistory): boolean {
  const last = history.turns[history.turns.length - 1];
  return last?.role === 'user' && last.items.some((item) => item.kind === 'result');
}
