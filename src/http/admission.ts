/**
 * How every route that reads a request body admits it: one home, so no route reads a body on
 * terms of its own (issue 25: `POST /v1/responses/input_tokens` read forty parallel 30 MB bodies
 * from a key allowed one request a minute).
 *
 * Keyed routes ({@link readKeyedBody}), in this order:
 * 1. the key's limits are checked before a byte of the body is read (`limiter.check`): a model
 *    request against everything no body can change, a counting request (count_tokens,
 *    input_tokens) against the key's budget for unadmitted work only;
 * 2. the body is held against the body budget (./body-budget.ts: per key and in all) from the
 *    start of the read until the request lets it go (at the latest when the response closes);
 * 3. the body is read within `limits.max_body_bytes` and `limits.body_timeout_ms`;
 * 4. a counting request is charged to the key's budget for unadmitted work at once; a model
 *    request is charged only when it is refused before admission (`refused()`).
 *
 * Small routes ({@link readSmallBody}: the device flow, the device page, the dashboard's forms,
 * most of them before any key is known) take at most {@link SMALL_BODY_BYTES}, and the whole body
 * must arrive within {@link SMALL_BODY_DEADLINE_MS} (or `limits.body_timeout_ms` when shorter):
 * a body dripped a byte at a time never pauses long enough for the idle bound, so only a total
 * deadline frees its socket.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LimitSet, Limiter } from '../limits/limiter.ts';
import type { BodyBudget, BodyClaim } from './body-budget.ts';
import { readBody } from './body.ts';
import { rateLimitError } from './rate-limit.ts';
import { onClose } from './respond.ts';

/** The largest body a small route reads. */
export const SMALL_BODY_BYTES = 16 * 1024;
/** The longest a small route's whole body may take to arrive. */
export const SMALL_BODY_DEADLINE_MS = 5_000;

/** What admitting a keyed body needs from the gateway. */
export interface BodyAdmission {
  limiter: Limiter;
  bodies: BodyBudget;
  maxBodyBytes: number;
  bodyTimeoutMs: number;
}

/**
 * `model`: a request that is admitted later with its reservation, and charged only if refused
 * before that. `counted`: a request that is never admitted (count_tokens, input_tokens) and is
 * charged as unadmitted work once its body is read.
 */
export type BodyKind = 'model' | 'counted';

/** A body read under its key's admission. */
export interface KeyedBody {
  bytes: Buffer;
  /** The body's hold on the body budget; released when the response closes, or earlier by the caller. */
  claim: BodyClaim;
  /** Charges the body as unadmitted work (a model request refused before admission); later calls do nothing. */
  refused(): void;
}

/**
 * Reads a keyed route's body under the key's admission (see the header). Rejects with the refusal.
 * Not async: its promise is the body read's, continued once (no wrapper promise, no await).
 */
export function readKeyedBody(
  req: IncomingMessage,
  res: ServerResponse,
  admission: BodyAdmission,
  key: { id: string; limits: LimitSet },
  kind: BodyKind,
): Promise<KeyedBody> {
  const { limiter } = admission;
  let claim: BodyClaim;
  try {
    const early = limiter.check(key.id, key.limits, kind === 'model' ? 'model' : 'unadmitted');
    if (early !== undefined) throw rateLimitError(early);
    claim = admission.bodies.claim(key.id);
  } catch (err) {
    return Promise.reject(err);
  }
  releaseOnClose(res, claim);
  return readBody(req, admission.maxBodyBytes, { idleTimeoutMs: admission.bodyTimeoutMs, claim }).then(
    (bytes) => keyedBody(bytes, claim, limiter, key, kind),
    (err: unknown) => {
      claim.release();
      throw err;
    },
  );
}

/** The body read, with its charge for unadmitted work (at once for a counted body). */
function keyedBody(bytes: Buffer, claim: BodyClaim, limiter: Limiter, key: { id: string; limits: LimitSet }, kind: BodyKind): KeyedBody {
  // Only the size: a closure that named `bytes` here would keep the body for as long as the
  // response is open (V8 gives this function's closures one shared context; see releaseOnClose).
  const size = bytes.length;
  let charged = false;
  const refused = (): void => {
    if (charged) return;
    charged = true;
    limiter.chargeUnadmitted(key.id, key.limits, size);
  };
  if (kind === 'counted') refused();
  return { bytes, claim, refused };
}

/**
 * The claim released when the response closes, from a function of its own: the listener lives as
 * long as the response (minutes, for a stream), and a closure written inside readKeyedBody would
 * share that function's context, and with it whatever its other closures name.
 */
function releaseOnClose(res: ServerResponse, claim: BodyClaim): void {
  onClose(res, () => claim.release());
}

/** Reads a small route's body: at most {@link SMALL_BODY_BYTES}, all of it within a few seconds. */
export function readSmallBody(req: IncomingMessage, bodyTimeoutMs: number | undefined): Promise<Buffer> {
  const idleTimeoutMs = bodyTimeoutMs ?? SMALL_BODY_DEADLINE_MS;
  return readBody(req, SMALL_BODY_BYTES, { idleTimeoutMs, deadlineMs: Math.min(SMALL_BODY_DEADLINE_MS, idleTimeoutMs) });
}
