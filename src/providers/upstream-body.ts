/**
 * What goes upstream for one candidate model: in which format, and the body — the client's own
 * with the upstream's model id when the provider answers the client's format, else translated.
 */
import type { ModelEntry, ProviderConfig } from '../config-types.ts';
import type { ClientRequestOf, WireFormat } from '../formats/wire.ts';
import { dialects } from '../dialects/index.ts';
import { translationFor } from '../translate/index.ts';
import type { UpstreamModel } from '../translate/index.ts';
import { invalidParameters } from '../errors.ts';

/** The format a provider is spoken to in for a client of `clientFormat`. */
export function upstreamFormatFor(provider: ProviderConfig, clientFormat: WireFormat): WireFormat {
  return provider.serves?.includes(clientFormat) === true ? clientFormat : provider.format;
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
 * The upstream request body for this model, translated when the formats differ. A body nested so
 * deep that serialising it overflows the stack is the client's error, not ours.
 */
export function buildUpstreamBody<F extends WireFormat>(
  request: ClientRequestOf<F>,
  upstreamFormat: WireFormat,
  model: ModelEntry,
  onWarning: (message: string) => void,
): string {
  try {
    const translation = translationFor(request.format, upstreamFormat);
    if (translation === undefined) return dialects[request.format].passThroughBody(request.body, model.upstream_id);
    return JSON.stringify(translation.request(request.body, upstreamModelOf(model), onWarning));
  } catch (err) {
    if (err instanceof RangeError) throw invalidParameters('body: nests too deeply to be forwarded; flatten the request');
    throw err;
  }
}
