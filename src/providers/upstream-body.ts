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
import { familyOf } from './family.ts';
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

/**
 * The model a translator shapes a request for; with its `provider`, who answers (what carried
 * state it may be sent: llmux.md section 11) and whether prompt-cache breakpoints are added (the
 * model's `prompt_cache`, else its provider's, else on).
 */
export function upstreamModelOf(model: ModelEntry, provider?: ProviderConfig): UpstreamModel {
  const upstream: UpstreamModel = {
    upstreamId: model.upstream_id,
    reasoning: model.reasoning,
    maxTokensParam: model.max_tokens_param,
    replayReasoning: model.replay_reasoning,
    maxOutputTokens: model.max_output_tokens,
    promptCache: (model.prompt_cache ?? provider?.promptCache ?? 'auto') === 'auto',
  };
  if (provider !== undefined) upstream.issuer = { provider: provider.id, family: familyOf(provider) };
  return upstream;
}

/**
 * The upstream request body for this model of `provider`, translated when the formats differ, in
 * `envelope` (the platform's; undefined: none). The conversation's carried state is sorted for
 * this provider's family as the body is built (llmux.md section 11): so each candidate of a
 * fallback gets its own, and another family's is stripped. A body nested so deep that serialising
 * it overflows the stack is the client's error, not ours.
 *
 * A body read lazily (src/common/json-lazy.ts) is translated as it is when its translator reads
 * lazily (`readsLazily`), its texts written from the client's bytes into the translated body;
 * should it have serialised a text into another string (which only a decoded text can be), the
 * request is decoded whole and translated again; the warnings are told once, from the translation
 * that is sent. Any other translator is given the body decoded whole, and so is a same-format body
 * whose carried state puts a text inside another string.
 */
export function buildUpstreamBody<F extends WireFormat>(
  request: ClientRequestOf<F>,
  upstreamFormat: UpstreamFormat,
  model: ModelEntry,
  turn: TurnOf[F],
  onWarning: (message: string) => void,
  envelope?: MemberChanges,
  provider?: ProviderConfig,
): UpstreamBody<F> {
  try {
    const upstream = upstreamModelOf(model, provider);
    const translation = translationFor(request.format, upstreamFormat);
    if (translation === undefined) {
      const carry = { turn, model: upstream, onWarning };
      const dialect = dialects[request.format];
      try {
        return { body: dialect.passThroughBody(request.body, model.upstream_id, request.raw, envelope, carry), translated: undefined };
      } catch (err) {
        if (!(err instanceof NotLazyError)) throw err;
        // The carried state wrote a text into another string: the body decoded, and serialised whole.
        return { body: dialect.passThroughBody(realValue(request.body, request.raw?.texts), model.upstream_id, undefined, envelope, carry), translated: undefined };
      }
    }
    const context = { modelId: model.id, model: upstream, onWarning, turn };
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
