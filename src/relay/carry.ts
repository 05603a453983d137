/**
 * A chat client's answer passed through from a chat upstream still leaves its opaque state for the
 * next turn (llmux.md section 11): the bytes go to the client untouched, while a chat decoder reads
 * the same events into the turn's recorder (src/translate/carry-recorder.ts), which hands each tool
 * call's state to the server-side store. Only for upstreams that issue state a chat client could
 * lose: a Gemini or OpenRouter family (thought signatures, `reasoning_details`, and any provider
 * given a `family`) and `replay_reasoning` models (DeepSeek's `reasoning_content`); any other
 * stream is not read twice.
 */
import type { ModelEntry, ProviderConfig } from '../config/types.ts';
import type { UpstreamFormat, WireFormat } from '../formats/wire.ts';
import type { StreamDecoder } from '../translate/answer-events.ts';
import type { ChatTurn } from '../translate/carried.ts';
import type { TurnOf } from '../translate/index.ts';
import { createCarryRecorder } from '../translate/carry-recorder.ts';
import { createChatStreamDecoder, decodeChatAnswer } from '../translate/chat-decoder.ts';
import { familyOf } from '../providers/family.ts';

/** Families whose chat upstreams issue state a chat client's history may not keep. */
const STATEFUL_FAMILIES: ReadonlySet<string> = new Set(['gemini', 'openrouter']);

/** Reads a passed-through chat answer's state into the store, streamed or whole. */
export interface PassThroughCarry {
  /** A decoder to feed the stream's events. */
  stream(): StreamDecoder;
  /** Reads a whole answer (its bytes, as the upstream sent them). */
  whole(bytes: Buffer): void;
}

/** The reader of a pass-through answer's state, or undefined when there is nothing to keep. */
export function passThroughCarry<F extends WireFormat>(
  clientFormat: F,
  upstreamFormat: UpstreamFormat,
  clientTurn: TurnOf[F],
  provider: ProviderConfig,
  model: ModelEntry,
): PassThroughCarry | undefined {
  if ((clientFormat as WireFormat) !== 'chat' || upstreamFormat !== 'chat' || clientTurn === undefined) return undefined;
  const turn = clientTurn as ChatTurn;
  const family = familyOf(provider);
  if (!model.replay_reasoning && !STATEFUL_FAMILIES.has(family) && provider.family === undefined) return undefined;
  const issuer = { provider: provider.id, family };
  return {
    stream: () => createChatStreamDecoder(createCarryRecorder(issuer, turn.remember)),
    whole(bytes) {
      let answer: unknown;
      try {
        answer = JSON.parse(bytes.toString('utf8'));
      } catch {
        return;
      }
      decodeChatAnswer(answer, createCarryRecorder(issuer, turn.remember));
    },
  };
}
