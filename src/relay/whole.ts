/**
 * A whole (non-streamed) upstream answer to the client: the upstream's bytes unchanged when the
 * formats match (only usage is read, without parsing the whole answer when it can be found on its
 * own, and the top-level `model` names the llmux id), else parsed once and translated.
 */
import type { ServerResponse } from 'node:http';
import type { ProviderConfig } from '../config-types.ts';
import type { TokenUsage, WireFormat } from '../formats/wire.ts';
import { peekUsage } from '../formats/usage-peek.ts';
import { dialects } from '../dialects/index.ts';
import { translationFor } from '../translate/index.ts';
import { withModel } from '../translate/model-field.ts';
import { GatewayError, upstreamFailed } from '../errors.ts';
import { sendJson } from '../http/respond.ts';
import { readUpstreamBody } from '../providers/upstream.ts';
import type { Cancellation, UpstreamResponse } from '../providers/upstream.ts';
import { isRecord } from '../json.ts';

/** Upper bound on a non-streamed upstream answer held in memory. */
const MAX_UPSTREAM_BODY_BYTES = 64 * 1024 * 1024;

export interface WholeAnswer {
  upstream: UpstreamResponse;
  provider: ProviderConfig;
  clientFormat: WireFormat;
  upstreamFormat: WireFormat;
  /** The llmux model id that answered: the answer names it. */
  model: string;
  cancellation: Cancellation;
  idleTimeoutMs: number;
  onWarning(message: string): void;
  /** Called when the whole answer has arrived (time to first byte of ours). */
  onArrived(): void;
}

/** Sends the answer; resolves with the usage the upstream reported. */
export async function relayWhole(res: ServerResponse, answer: WholeAnswer): Promise<TokenUsage> {
  const { upstream, provider, cancellation } = answer;
  // A client that leaves while a long answer is generated stops it.
  cancellation.listen(() => upstream.destroy());
  const bytes = await readUpstreamBody(upstream, MAX_UPSTREAM_BODY_BYTES, answer.idleTimeoutMs);
  cancellation.unlisten();
  answer.onArrived();
  const { readUsage } = dialects[answer.upstreamFormat];
  const translation = translationFor(answer.clientFormat, answer.upstreamFormat);
  if (translation === undefined) {
    const usage = peekUsage(bytes) ?? parseAnswer(bytes, provider)['usage'];
    sendJson(res, 200, withModel(bytes, Buffer.from(JSON.stringify(answer.model))));
    return readUsage(usage);
  }
  const parsed = parseAnswer(bytes, provider);
  let translated: unknown;
  try {
    translated = translation.answer(parsed, answer.model, answer.onWarning);
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    throw upstreamFailed(`Provider "${provider.id}" sent an answer llmux could not translate`);
  }
  sendJson(res, 200, JSON.stringify(translated));
  return readUsage(parsed['usage']);
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
