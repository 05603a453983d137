/**
 * Reads and deletes of what a Responses provider keeps itself, forwarded for llmux's client
 * (responses.md "Pass-through and key isolation"): `GET /responses/{id}`, its `input_items`, and
 * `DELETE /responses/{id}`, sent with the provider's credential. Only for ids llmux recorded for the
 * asking key (src/responses/passthrough.ts); the caller checks that. The provider's answer comes
 * back with every credential taken out of it; its errors become llmux's (./upstream-errors.ts).
 */
import { GatewayError, upstreamFailed } from '../common/errors.ts';
import { dialects } from '../dialects/index.ts';
import type { AttemptContext } from './attempts.ts';
import { IN_PROCESS_SCHEME, createCancellation, readUpstreamBody } from './upstream.ts';
import { upstreamErrorOf } from './upstream-errors.ts';

/** Largest forwarded answer read (a stored response with its output). */
const MAX_FORWARDED_BYTES = 64 * 1024 * 1024;

/** A read or delete for provider `providerId`: `path` under its base URL (`/responses/resp_…`, with a query). */
export async function forwardToProvider(ctx: AttemptContext, providerId: string, method: 'GET' | 'DELETE', path: string): Promise<Buffer> {
  const provider = ctx.provider(providerId);
  // An in-process provider (the echo model) keeps nothing to read back.
  if (provider === undefined || provider.baseUrl.startsWith(IN_PROCESS_SCHEME)) {
    throw new GatewayError(404, 'not_found_error', 'response_not_found', `The provider "${providerId}" that answered this response does not hold it (any more)`);
  }
  const carrier = ctx.carriers.of(provider);
  const call = { upstreamId: '', format: 'responses' as const, stream: false, formatHeaders: dialects.responses.formatHeaders({}) };
  const outgoing = { call, target: path, body: '', headers: carrier.headers(call) };
  await carrier.authorise(outgoing);
  const response = await ctx.transport.send({
    method,
    provider,
    endpoint: carrier.endpoint,
    format: 'responses',
    path: outgoing.target,
    body: outgoing.body,
    headers: outgoing.headers,
    client: undefined,
    cancellation: createCancellation(),
    connectTimeoutMs: ctx.connectTimeoutMs,
    firstByteTimeoutMs: ctx.firstByteTimeoutMs,
  });
  if ((response.statusCode ?? 502) >= 400) throw await upstreamErrorOf(response, carrier, ctx.idleTimeoutMs, ctx.redact);
  try {
    return Buffer.from(ctx.redact((await readUpstreamBody(response, MAX_FORWARDED_BYTES, ctx.idleTimeoutMs)).toString('utf8')));
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    throw upstreamFailed(`Provider "${provider.id}" sent an answer llmux could not read`);
  }
}
