/**
 * Writes the neutral answer events (./answer-events.ts) as a messages-format answer: the event
 * stream of translation.md "Streams" (`message_start`, content blocks, `message_delta`,
 * `message_stop`), or, without `write`, the whole answer (`MessagesResponse`) built by the same rules.
 *
 * - `message_start` names the llmux model (the upstream's without one) and announces the input
 *   estimate with zeroed cache counts until the upstream reports usage.
 * - One block open at a time: reasoning is a `thinking` block, text a `text` block, refusal text a
 *   `text` block of its own (the messages format has no refusal part), each call a `tool_use` block
 *   whose arguments stream as `input_json_delta`; its `caller` is `{"type": "direct"}`, as
 *   Anthropic's blocks say of a call the model made itself (the SDK's types require it). Another
 *   kind closes the open block (`content_block_stop`) and opens the next at index + 1; `stop`
 *   closes the last one.
 * - Opaque state (llmux.md section 11) goes where the format has a place for it, a thinking block's
 *   `signature` (a `signature_delta` before the block stops): with `sealItem`, the reasoning's state
 *   sealed (reasoning details, or the text alone as the provider's), and a call's own state (Gemini's
 *   thought signature) as a thinking block with no text right before its `tool_use`. The messages
 *   format's own state (a thinking signature, a redacted block) is written as it came. Without
 *   `sealItem` a thinking block's signature is "".
 * - A web search the upstream ran on its side (Gemini's grounding, which an Anthropic `web_search`
 *   tool became: llmux.md section 11) is written as Anthropic writes its own: the spans of the
 *   open text block it backs as `web_search_result_location` citations (`citations_delta`s), then
 *   per query a `server_tool_use` block (`web_search`, its query) and its `web_search_tool_result`
 *   (the pages found go with the first: the upstream does not say which query found which), and
 *   `usage.server_tool_use.web_search_requests`. Google gives no page content to encrypt and no
 *   page age: `encrypted_content` and `encrypted_index` are "" and `page_age` null, so these
 *   blocks replay to no Anthropic upstream (they go back to the one that searched).
 * - The stop reason is `refusal` when the answer carried refusal text, else the stop's
 *   (./stop-reasons.ts). `message_delta` (stop reason, usage) and `message_stop` wait for `end`:
 *   usage may come after the stop. Without a usage report `message_delta` carries
 *   `output_tokens: 0` only, so clients keep the estimate from `message_start`.
 * - A call without an id gets a made-up one (`toolu_…`, or the decoder's prefix). The whole answer
 *   parses each call's arguments into `input`: arguments that are not a JSON object become `{}`,
 *   with a warning naming where the upstream put them.
 * - `fail` writes `event: error` with the error's type when it is one of the format's, else
 *   `api_error`; nothing is written after it.
 *
 * Every event is one template string around the JSON of its variable parts (the text, the
 * arguments), written at once: building objects per delta to stringify them whole was the part of
 * a translated stream that was ours to cut (bench/RESULTS.md). The templates keep
 * JSON.stringify's key order and spacing.
 */
import { createHash } from 'node:crypto';
import type { MessagesResponse, MessagesResponseBlock, MessagesStopReason, MessagesUsage, MessagesWebSearchResult, TokenUsage } from '../formats/wire.ts';
import { type AnswerEncoder, type AnswerStop, type AnswerUsage, type CallStart, type OpaqueState, type ServerSearch, ignoreEvent } from './answer-events.ts';
import type { CarriedItem } from './carried.ts';
import { messagesErrorFrame } from '../formats/frames.ts';
import { toMessagesUsage, ZERO_USAGE } from '../formats/usage.ts';
import { asRecord } from '../common/json.ts';
import { newId } from '../common/ids.ts';
import { toMessagesStop } from './stop-reasons.ts';

export interface MessagesEncoderOptions {
  /** Where the events go; without it nothing is written and `answer()` is the whole answer. */
  write?: (text: string) => void;
  /** Input tokens announced in `message_start` until the upstream reports usage. */
  estimatedInputTokens?: number;
  /** Message id (`msg_…`); random by default. Tests pin it. */
  messageId?: string;
  /** The llmux model id the answer names; the upstream's when absent. */
  model?: string;
  /** Told about output that was repaired (unparsable call arguments; for the request log). */
  onWarning?: (message: string) => void;
  /** Seals opaque state for the key that asked, naming the provider that answered (./carried.ts). */
  sealItem?: ((item: CarriedItem) => string) | undefined;
}

/** Anthropic error types; an error of another type is reported as `api_error`. */
const MESSAGES_ERROR_TYPES = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'rate_limit_error',
  'api_error',
  'overloaded_error',
]);

const SERVER_TOOL_ID_HASH_CHARS = 24;
/** A block the model made itself (the `caller` Anthropic's blocks carry). */
const DIRECT = { type: 'direct' } as const;

type BlockKind = 'thinking' | 'redacted_thinking' | 'text' | 'refusal' | 'tool_use' | 'server_tool';

const THINKING_BLOCK_JSON = '{"type":"thinking","thinking":"","signature":""}';
const TEXT_BLOCK_JSON = '{"type":"text","text":""}';

/** A whole answer's call arguments as `input`: a JSON object, else `{}` and a warning naming where they were. */
function inputOf(args: string, path: string | undefined, warn: ((message: string) => void) | undefined): Record<string, unknown> {
  if (args.trim() === '') return {};
  const where = path ?? 'tool call arguments';
  try {
    const record = asRecord(JSON.parse(args));
    if (record !== undefined) return record;
    warn?.(`${where}: JSON but not an object; sent upstream as {}`);
  } catch {
    warn?.(`${where}: not valid JSON; sent upstream as {}`);
  }
  return {};
}

/** Creates the messages encoder; with `options.write`, every event is written as soon as it exists. */
export function createMessagesEncoder(options: MessagesEncoderOptions): AnswerEncoder<MessagesResponse> {
  const write = options.write;
  const silent = write === undefined;
  const estimatedInputTokens = Math.max(0, Math.floor(options.estimatedInputTokens ?? 0));
  const messageId = options.messageId ?? newId('msg_');
  const messageIdJson = JSON.stringify(messageId);
  const inputTokensJson = JSON.stringify(estimatedInputTokens);
  const sealItem = options.sealItem;

  let started = false;
  let finished = false;
  let refused = false;
  let model = '';
  let stop: AnswerStop | undefined;
  let reported: AnswerUsage | undefined;

  let openKind: BlockKind | undefined;
  let nextBlockIndex = 0;
  // The whole answer's blocks, and the open call's arguments and where they came from (silent only).
  const content: MessagesResponseBlock[] = [];
  let openBlock: MessagesResponseBlock | undefined;
  let callArgs = '';
  let callPath: string | undefined;
  // Whether the open thinking block has its signature.
  let signed = false;
  // Searches the upstream ran on its side, for usage.server_tool_use.
  let searches = 0;

  function start(upstreamModel: string | undefined): void {
    if (started) return;
    started = true;
    model = options.model ?? upstreamModel ?? '';
    if (silent) return;
    write(
      `event: message_start\ndata: {"type":"message_start","message":{"id":${messageIdJson},"type":"message","role":"assistant","content":[],` +
        `"model":${JSON.stringify(model)},"stop_reason":null,"stop_sequence":null,` +
        `"usage":{"input_tokens":${inputTokensJson},"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}\n\n`,
    );
  }

  /** The open thinking block's signature: a `signature_delta` in a stream. */
  function sign(signature: string): void {
    signed = true;
    if (signature === '') return;
    if (silent) (openBlock as { signature?: string }).signature = signature;
    else emitDelta(`{"type":"signature_delta","signature":${JSON.stringify(signature)}}`);
  }

  /** The signature of reasoning ended with `state`: the messages format's own as it came, any other sealed. */
  function signatureOf(state: OpaqueState | undefined): string {
    if (state?.kind === 'thinking-signature') return state.signature;
    if (sealItem === undefined) return '';
    if (state?.kind === 'reasoning-details') return sealItem({ kind: 'reasoning-details', details: state.details });
    // A Gemini thought part's signature: the reasoning's own state, for no call in particular.
    if (state?.kind === 'thought-signature') return sealItem({ kind: 'thought-signature', signature: state.signature });
    return sealItem({ kind: 'reasoning' });
  }

  function closeBlock(): void {
    if (openKind === undefined) return;
    // Reasoning ended by another kind of content is the provider's reasoning, sealed as such.
    if (openKind === 'thinking' && !signed) sign(signatureOf(undefined));
    if (silent) {
      if (openBlock?.type === 'tool_use') openBlock.input = inputOf(callArgs, callPath, options.onWarning);
      if (openBlock !== undefined) content.push(openBlock);
      openBlock = undefined;
    } else {
      write(`event: content_block_stop\ndata: {"type":"content_block_stop","index":${nextBlockIndex - 1}}\n\n`);
    }
    openKind = undefined;
  }

  /** Opens a block of `kind`: `block` is the whole answer's, `blockJson` the stream's `content_block`. */
  function open(kind: BlockKind, block: MessagesResponseBlock, blockJson: string): void {
    closeBlock();
    if (!started) start(undefined);
    openKind = kind;
    signed = false;
    const index = nextBlockIndex;
    nextBlockIndex += 1;
    if (silent) openBlock = block;
    else write(`event: content_block_start\ndata: {"type":"content_block_start","index":${index},"content_block":${blockJson}}\n\n`);
  }

  /** Writes a delta for the open block; `deltaJson` is the `delta` object as JSON. */
  function emitDelta(deltaJson: string): void {
    (write as (text: string) => void)(`event: content_block_delta\ndata: {"type":"content_block_delta","index":${nextBlockIndex - 1},"delta":${deltaJson}}\n\n`);
  }

  /** Text into the open block of `kind` (a refusal's text is a text block of its own). */
  function addText(kind: 'text' | 'refusal', delta: string): void {
    if (openKind !== kind) open(kind, { type: 'text', text: '' }, TEXT_BLOCK_JSON);
    if (silent) (openBlock as { text: string }).text += delta;
    else emitDelta(`{"type":"text_delta","text":${JSON.stringify(delta)}}`);
  }

  /** The spans of the open text block `search` backs, as Anthropic's citations. */
  function cite(search: ServerSearch): void {
    if (openKind !== 'text') return;
    for (const citation of search.citations) {
      for (const index of citation.sources) {
        const source = search.sources[index];
        if (source === undefined) continue;
        const location = { type: 'web_search_result_location', url: source.url, title: source.title, encrypted_index: '', cited_text: citation.text };
        if (silent) ((openBlock as { citations?: unknown[] }).citations ??= []).push(location);
        else emitDelta(`{"type":"citations_delta","citation":${JSON.stringify(location)}}`);
      }
    }
  }

  /** A `server_tool_use` block and its result block: a block each, whole. */
  function serverTool(query: string, results: MessagesWebSearchResult[]): void {
    // Made from the message id and the block's place: the same answer names its blocks the same, streamed or whole.
    const id = `srvtoolu_${createHash('sha256').update(`${messageId}\u0000${nextBlockIndex}`).digest('hex').slice(0, SERVER_TOOL_ID_HASH_CHARS)}`;
    open('server_tool', { type: 'server_tool_use', id, name: 'web_search', caller: DIRECT, input: { query } }, `{"type":"server_tool_use","id":${JSON.stringify(id)},"name":"web_search","caller":{"type":"direct"},"input":{}}`);
    if (!silent) emitDelta(`{"type":"input_json_delta","partial_json":${JSON.stringify(JSON.stringify({ query }))}}`);
    const result = { type: 'web_search_tool_result' as const, tool_use_id: id, caller: DIRECT, content: results };
    open('server_tool', result, JSON.stringify(result));
    closeBlock();
  }

  /** The usage object, with the upstream's own searches when it ran any. */
  function usageOf(usage: TokenUsage): MessagesUsage {
    const out = toMessagesUsage(usage);
    if (searches > 0) out['server_tool_use'] = { web_search_requests: searches, web_fetch_requests: 0 };
    return out;
  }

  function stopReason(): { stopReason: MessagesStopReason; stopSequence: string | null } {
    if (refused) return { stopReason: 'refusal', stopSequence: null };
    return toMessagesStop(stop ?? { reason: 'end_turn' });
  }

  return {
    start,
    text(delta) {
      if (delta !== '' && !finished) addText('text', delta);
    },
    refusal(delta) {
      if (delta === '' || finished) return;
      refused = true;
      addText('refusal', delta);
    },
    reasoning(delta) {
      if (delta === '' || finished) return;
      if (openKind !== 'thinking') open('thinking', { type: 'thinking', thinking: '', signature: '' }, THINKING_BLOCK_JSON);
      if (silent) (openBlock as { thinking: string }).thinking += delta;
      else emitDelta(`{"type":"thinking_delta","thinking":${JSON.stringify(delta)}}`);
    },
    reasoningEnd(state) {
      if (finished) return;
      if (openKind === 'thinking') {
        sign(signatureOf(state));
        closeBlock();
      } else if (state?.kind === 'redacted-thinking') {
        open('redacted_thinking', { type: 'redacted_thinking', data: state.data }, JSON.stringify({ type: 'redacted_thinking', data: state.data }));
        closeBlock();
      } else if (state !== undefined && sealItem !== undefined) {
        // State without text (reasoning details only): a thinking block of its own carries it.
        open('thinking', { type: 'thinking', thinking: '', signature: '' }, THINKING_BLOCK_JSON);
        sign(signatureOf(state));
        closeBlock();
      }
    },
    callStart(call: CallStart) {
      if (finished) return;
      const id = call.id ?? newId(call.madeUpIdPrefix ?? 'toolu_');
      if (call.state !== undefined && call.state.kind !== 'thinking-signature' && sealItem !== undefined) {
        // The call's own state goes right before it, in a thinking block with no text.
        const item: CarriedItem = call.state.kind === 'thought-signature' ? { kind: 'thought-signature', signature: call.state.signature, callId: id } : { kind: 'reasoning' };
        open('thinking', { type: 'thinking', thinking: '', signature: '' }, THINKING_BLOCK_JSON);
        sign(sealItem(item));
      }
      callArgs = '';
      callPath = call.path;
      open('tool_use', { type: 'tool_use', id, name: call.name, caller: { type: 'direct' }, input: {} }, `{"type":"tool_use","id":${JSON.stringify(id)},"name":${JSON.stringify(call.name)},"caller":{"type":"direct"},"input":{}}`);
    },
    callArguments(fragment) {
      if (fragment === '' || openKind !== 'tool_use') return;
      if (silent) callArgs += fragment;
      else emitDelta(`{"type":"input_json_delta","partial_json":${JSON.stringify(fragment)}}`);
    },
    callEnd() {
      if (openKind === 'tool_use') closeBlock();
    },
    // Nothing in a messages text block carries opaque state.
    annotate: ignoreEvent,
    search(search) {
      if (finished) return;
      cite(search);
      const results = search.sources.map((source): MessagesWebSearchResult => ({ type: 'web_search_result', url: source.url, title: source.title, encrypted_content: '', page_age: null }));
      const queries = search.queries.length > 0 ? search.queries : [''];
      queries.forEach((query, index) => serverTool(query, index === 0 ? results : []));
      searches += queries.length;
    },
    usage(usage) {
      reported = usage;
    },
    stop(answerStop) {
      if (finished) return;
      closeBlock();
      stop ??= answerStop;
    },
    end() {
      if (finished) return;
      if (!started) start(undefined);
      closeBlock();
      finished = true;
      if (silent) return;
      const { stopReason: reason, stopSequence } = stopReason();
      const usageJson = reported === undefined ? '{"output_tokens":0}' : JSON.stringify(usageOf(reported));
      write(
        `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":${JSON.stringify(reason)},` +
          `"stop_sequence":${JSON.stringify(stopSequence)}},"usage":${usageJson}}\n\n`,
      );
      write('event: message_stop\ndata: {"type":"message_stop"}\n\n');
    },
    fail(message, type) {
      if (finished) return;
      finished = true;
      write?.(messagesErrorFrame({ message, type: type !== undefined && MESSAGES_ERROR_TYPES.has(type) ? type : 'api_error' }));
    },
    answer(): MessagesResponse {
      const { stopReason: reason, stopSequence } = stopReason();
      return {
        id: messageId,
        type: 'message',
        role: 'assistant',
        model,
        content: openBlock === undefined ? content : [...content, openBlock],
        stop_reason: reason,
        stop_sequence: stopSequence,
        usage: usageOf(reported ?? ZERO_USAGE),
      };
    },
  };
}
