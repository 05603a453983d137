/**
 * A whole (non-streamed) upstream answer to the client: the upstream's bytes unchanged when the
 * formats match (only usage is read, without parsing the whole answer when it can be found on its
 * own, and the top-level `model` names the llmux id), else parsed once and translated.
 */
import type { ServerResponse } from 'node:http';
import type { ProviderConfig } from '../config/types.ts';
import type { TokenUsage, UpstreamFormat, WireFormat } from '../formats/wire.ts';
import { peekUsage } from '../formats/usage-peek.ts';
import { dialects } from '../dialects/index.ts';
import { decoderFor } from '../translate/index.ts';
import type { AnswerTranslation } from '../translate/index.ts';
import { GatewayError, upstreamFailed } from '../common/errors.ts';
import { sendJson } from '../http/respond.ts';
import { readUpstreamBody } from '../providers/upstream.ts';
import type { Cancellation, UpstreamResponse } from '../providers/upstream.ts';
import { isRecord } from '../common/json.ts';
import { redactBytes } from '../providers/redact.ts';
import type { Redact } from '../providers/redact.ts';
import type { PassThroughCarry } from './carry.ts';

/** Upper bound on a non-streamed upstream answer held in memory. */
const MAX_UPSTREAM_BODY_BYTES = 64 * 1024 * 1024;

export interface WholeAnswer {
  upstream: UpstreamResponse;
  provider: ProviderConfig;
  clientFormat: WireFormat;
  upstreamFormat: UpstreamFormat;
  /** How the answer is translated back; undefined when it passes through. */
  translated: AnswerTranslation<WireFormat> | undefined;
  /** The llmux id of the model that answered, for a pass-through answer that names its model. */
  modelId: string;
  /** Input tokens to report when a translated answer carries no usage. */
  estimatedInputTokens: number;
  cancellation: Cancellation;
  idleTimeoutMs: number;
  onWarning(message: string): void;
  /** Called when the whole answer has arrived (time to first byte of ours). */
  onArrived(): void;
  /** Takes credentials out of the answer as the client gets it (src/providers/redact.ts). */
  redact?: Redact | undefined;
  /** Reads a passed-through answer's carried state for the next turn (./carry.ts). */
  carry?: PassThroughCarry | undefined;
}

/** What the client was sent. */
export interface WholeResult {
  /** The usage the upstream reported. */
  usage: TokenUsage;
  /** The answer as the client got it, when it was parsed (translated, or a pass-through answer read whole); else undefined. */
  answer: unknown;
}

/** Sends the answer; resolves with the usage the upstream reported and the answer as sent. */
export async function relayWhole(res: ServerResponse, answer: WholeAnswer): Promise<WholeResult> {
  const { upstream, provider, cancellation } = answer;
  // A client that leaves while a long answer is generated stops it.
  cancellation.listen(() => upstream.destroy());
  // An answer that has arrived whole is there at once: no await, no turn of the microtask queue.
  const read = readUpstreamBody(upstream, MAX_UPSTREAM_BODY_BYTES, answer.idleTimeoutMs);
  const bytes = read instanceof Promise ? await read : read;
  cancellation.unlisten();
  answer.onArrived();
  const { translated } = answer;
  if (translated === undefined) {
    answer.carry?.whole(bytes);
    // Passed through: the upstream speaks the client's format.
    const { readUsage, usageKey } = dialects[answer.clientFormat];
    const passed = dialects[answer.clientFormat].passThroughAnswer(bytes, answer.modelId);
    const usage = isRecord(passed.answer) ? passed.answer[usageKey] : peekUsage(bytes, usageKey) ?? parseAnswer(bytes, provider)[usageKey];
    sendJson(res, 200, answer.redact === undefined ? passed.bytes : redactBytes(answer.redact, passed.bytes));
    return { usage: readUsage(usage), answer: passed.answer };
  }
  const parsed = parseAnswer(bytes, provider);
  let translatedAnswer: unknown;
  try {
    translatedAnswer = translated.answer(parsed, { estimatedInputTokens: answer.estimatedInputTokens, onWarning: answer.onWarning });
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    throw upstreamFailed(`Provider "${provider.id}" sent an answer llmux could not translate`);
  }
  const text = JSON.stringify(translatedAnswer);
  sendJson(res, 200, answer.redact === undefined ? text : answer.redact(text));
  return { usage: decoderFor(answer.upstreamFormat).usage(parsed), answer: translatedAnswer };
}

/** A whole upstream answer as an object, or a 502 naming the provider. */
function parseAnswer(bytes: Buffer, provider: ProviderConfig): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw upstreamFailed(`Provider "${provider.id}" sent an answer that is not JSON`);
  }
  if (!isRecord(parsed)) throw upstreamFailed(`Provider "${provider.id}" sent an answer that is not a JSON object`);
  return parsed;
}
