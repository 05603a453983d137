/**
 * How a model request's body is read (issue 26): one walk over its bytes checks its nesting, finds
 * its top-level members and leaves the long texts of its text members as bytes
 * (src/formats/text-members.ts, src/common/json-lazy.ts); the rest, a few KB of a 200 KB agent
 * turn, is parsed and validated by the dialect exactly as a whole body would be (no rule reads
 * those texts' characters), and what the pipeline and routing read of it besides (the estimate,
 * the output cap, traits, the conversation key) comes from the same read: its {@link RequestFacts}.
 *
 * The whole parse stays the judge: a body the lazy read cannot serve (U+0000 in it, a text JSON
 * would refuse, malformed JSON) was already read whole by the reader, and a body the dialect
 * refuses as read lazily is read whole and validated again, so every refusal is the one the
 * whole parse gives, in its words.
 */
import type { ClientRequestOf, WireFormat } from '../formats/wire.ts';
import type { RequestTraits } from '../formats/traits.ts';
import type { JsonObjectBytes, LazyMembers } from '../common/json-bytes.ts';
import type { Arrival, Dialect, ReadRequest, RequestFacts } from './dialect.ts';

/**
 * The body's bytes read as one JSON object (src/http/body.ts `readJsonObject` over them): given
 * `lazy`, with those members' long texts left as bytes; throws the 400 of a body that is no object.
 */
export type ReadJsonObject = (lazy?: LazyMembers) => JsonObjectBytes;

/** Reads, validates and tells the facts of a model request's body; throws the whole parse's 400. */
export function readClientRequest<F extends WireFormat>(dialect: Dialect<F>, read: ReadJsonObject, arrival: Arrival): ReadRequest<F> {
  let raw = read(dialect.lazyMembers);
  let request: ClientRequestOf<F>;
  try {
    request = dialect.readRequest(raw.value, arrival);
  } catch (err) {
    if (raw.texts === undefined) throw err;
    raw = read();
    request = dialect.readRequest(raw.value, arrival);
  }
  // The client's bytes go on with the request: a same-format upstream is sent them, its model spliced in.
  request.raw = raw;
  return { request, facts: factsOf(dialect, request) };
}

/** The facts of a request as read, each computed when first asked. */
export function factsOf<F extends WireFormat>(dialect: Dialect<F>, request: ClientRequestOf<F>): RequestFacts {
  let held: ClientRequestOf<F> | undefined = request;
  const body = (): ClientRequestOf<F> => {
    if (held === undefined) throw new Error('a request fact was asked for after its body was let go');
    return held;
  };
  let inputTokens: number | undefined;
  let traits: RequestTraits | undefined;
  let conversation: { key: string | undefined } | undefined;
  return {
    maxTokens: dialect.maxTokens(request.body),
    inputTokens: () => (inputTokens ??= dialect.estimate(body().body, body().raw?.texts)),
    traits: () => (traits ??= dialect.traits(body().body)),
    // Sticky routing asks while attempts are made; once the body is let go, nothing is said.
    conversation: () => (conversation ??= { key: held === undefined ? undefined : dialect.conversationKey(held.body, held.raw?.texts) }).key,
    drop() {
      held = undefined;
    },
  };
}
