/**
 * What goes upstream for one candidate model: in which format, and the body — the client's own
 * with the upstream's model id when the provider answers the client's format, else translated —
 * in its platform's envelope (src/platforms/: members it sets or takes out).
 */
import type { ModelEntry, ProviderConfig } from '../config/types.ts';
import type { ClientRequestOf, UpstreamFormat, WireFormat } from '../formats/wire.ts';
import type { ForwardedHeaders } from '../dialects/index.ts';
import { dialects } from '../dialects/index.ts';
import { translationFor } from '../translate/index.ts';
import type { AnswerTranslation, TurnOf, UpstreamModel } from '../translate/index.ts';
import { invalidParameters } from '../common/errors.ts';
import { serializeJson } from '../common/json-bytes.ts';
import { NotLazyError, realValue } from '../common/json-lazy.ts';
import { changedObject } from '../common/member-changes.ts';
import type { MemberChanges } from '../common/member-changes.ts';

/** The upstream body, and (when the formats differ) how its answer is translated back. */
export interface UpstreamBody<F extends WireFormat> {
  /** The client's bytes with the upstream's model spliced in (same format: parts, in order), or the serialised body. */
  body: string | readonly Buffer[];
  translated: AnswerTranslation<F> | undefined;
}

/** The format a provider is spoken to in for a client of `clientFormat`. */
export function upstreamFormatFor(provider: ProviderConfig, clientFormat: WireFormat): UpstreamFormat {
  return provider.serves?.includes(clientFormat) === true ? clientFormat : provider.format;
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The format's own headers for an upstream call (`anthropic-version`, the client's `anthropic-beta`):
 * a client format's dialect makes them; Converse, which no client speaks, has none (its platform
 * carries everything in the path and the signature).
 */
export function formatHeadersFor(format: UpstreamFormat, forwarded: ForwardedHeaders): Readonly<Record<string, string>> {
  return format === 'converse' ? NO_HEADERS : dialects[format].formatHeaders(forwarded);
}

/** The model a translator shapes a request for. */
export function upstreamModelOf(model: ModelEntry): UpstreamModel {
  return {
    upstreamId: model.upstream_id,
    reasoning: model.reasoning,
    maxTokensParam: model.max_tokens_param,
    replayReasoning: model.replay_reasoning,
    maxOutputTokens: model.max_output_tokens,
  };
}

/**
 * The upstream request body for this model, translated when the formats differ, in `envelope`
 * (the platform's; undefined: none). A body nested so deep that serialising it overflows the stack
 * is the client's error, not ours.
 *
 * A body read lazily (src/common/json-lazy.ts) is translated as it is when its translator reads
 * lazily (`readsLazily`), its texts written from the client's bytes into the translated body;
 * should it have serialised a text into another string (which only a decoded text can be), the
 * request is decoded whole and translated again; the warnings are told once, from the translation
 * that is sent. Any other translator is given the body decoded whole.
 */
export function buildUpstreamBody<F extends WireFormat>(
  request: ClientRequestOf<F>,
  upstreamFormat: UpstreamFormat,
  model: ModelEntry,
  turn: TurnOf[F],
  onWarning: (message: string) => void,
  envelope?: MemberChanges,
): UpstreamBody<F> {
  try {
    const translation = translationFor(request.format, upstreamFormat);
    if (translation === undefined) return { body: dialects[request.format].passThroughBody(request.body, model.upstream_id, request.raw, envelope), translated: undefined };
    const context = { modelId: model.id, model: upstreamModelOf(model), onWarning, turn };
    const texts = request.raw?.texts;
    if (texts !== undefined && translation.readsLazily === true) {
      const warnings: string[] = [];
      try {
        const translated = translation.request(request.body, { ...context, onWarning: (message) => warnings.push(message) });
        const body = serializeJson(enveloped(translated.body as Record<string, unknown>, envelope), texts);
        for (const warning of warnings) onWarning(warning);
        return { body, translated: { answer: translated.answer, stream: translated.stream } };
      } catch (err) {
        if (!(err instanceof NotLazyError)) throw err;
      }
    }
    const translated = translation.request(realValue(request.body, texts), context);
    // Only what translates the answer back is kept: the translated body is let go once it is sent.
    return { body: serializeJson(enveloped(translated.body as Record<string, unknown>, envelope)), translated: { answer: translated.answer, stream: translated.stream } };
  } catch (err) {
    if (err instanceof RangeError) throw invalidParameters('body: nests too deeply to be forwarded; flatten the request');
    throw err;
  }
}

function enveloped(body: Record<string, unknown>, envelope: MemberChanges | undefined): Record<string, unknown> {
  return envelope === undefined ? body : changedObject(body, envelope);
}
