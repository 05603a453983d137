/**
 * Deployments and routing (llmux.md section 10): several deployments behind one model id, the
 * strategies that pick among them, rests, provider key pools, sticky conversations, aliases and
 * routes, and discovery. A unit with a narrow interface; the gateway wires it in this way
 * (src/gateway/routing.ts, src/gateway/pipeline.ts, src/providers/attempts.ts):
 *
 * ```ts
 * // Once, at start-up (gateway/server.ts):
 * const state = sharedState?.routing ?? createMemoryRoutingState();   // src/state/shared-state.ts opens the shared one
 * const router = createRouter({
 *   models: config.models,                                  // their deployments' rpm/tpm
 *   provider: (id) => catalog.provider(id),
 *   hasCredential: (provider, index) => …,                  // the key (or the platform's credentials) resolves
 *   state,
 *   onRest: (event) => log.warn(…event),                    // names keys by label, never by value
 * });
 * const resolver = createResolver({ routing: config.routing, isModel: (id) => catalog.get(id) !== undefined });
 * const discovery = createDiscovery({ providers, fetchModels: createHttpModelsFetcher({ headers }), isConfigured });
 * discovery.start();                                        // never awaited
 *
 * // Per request (gateway/pipeline.ts), before the model lookup:
 * const resolution = resolver.resolve(body.model, {
 *   clientFormat, keyTier: record.tier,
 *   traits: () => chatTraits(body),                         // src/formats/traits.ts, per format
 *   inputTokens: () => estimate,                            // src/formats/estimate.ts
 * });
 * checkModelAllowed(record, resolution.model, headers);     // on the model that answers
 * const model = catalog.get(resolution.model);              // 404 when undefined
 * // every answer names resolution.answerAs (a fallback that answers: its own id);
 * // the log line gets resolution.requested and resolution.model.
 *
 * // The attempts loop (providers/attempts.ts), over the model and its usable fallbacks:
 * const attempts = createAttemptSequence(router, [model, ...fallbacks], {
 *   keyId: record.id,
 *   conversation: () => chatConversationKey(body),          // src/formats/conversation-key.ts, per format
 *   reservedTokens,                                         // the limiter's reservation
 *   attempts: config.retry.attempts,
 *   maxRetryAfterMs: config.retry.maxRetryAfterMs,
 * });
 * for (let step = await attempts.next(); step !== undefined; step = await attempts.next()) {
 *   if (step.backoff) await backoff(step.attempt, step.retryAfterMs);
 *   // step.model, step.deployment.upstreamId, step.key?.index (resolve that key's value) → body, headers
 *   let response;
 *   try { response = await send(…) }
 *   catch (error) { step.outcome({ failure: timedOut ? 'timeout' : 'unreachable' }); step.end(); remember error; continue; }
 *   step.outcome({ status, retryAfterMs, ttfbMs });
 *   if (!RETRYABLE.has(status) && status !== 401 && status !== 403) → relay it; step.end({ tokens, responseId }) when relayed;
 *   else { remember the error; step.end(); }
 * }
 * if (attempts.refusal()) → 429 rate_limit_exceeded, retry-after ceil(refusal.retryAfterMs / 1000);
 * else → the last error remembered (or upstream_error when nothing was tried).
 * ```
 *
 * - `outcome` learns: rests (429 rests the key on that deployment when the pool has several keys,
 *   else the deployment; 529/503/unreachable the deployment at once; 500/502/504/timeout after
 *   three in a row; 401/403 the key for 5 minutes), the latency average, error counters, and on a
 *   2xx the conversation's binding. `end` frees the in-flight lease (hold it until the stream is
 *   relayed: least_busy counts running streams) and replaces the tokens reserved by those used.
 * - A step that is not sent after all (the provider cannot take the request) is `end()`ed without
 *   an outcome, and `next()` moves on.
 * - Metrics: `router.snapshot()` per deployment (requests, errors by code, time to first byte,
 *   in flight, resting), labels from the config and the catalog only.
 * - `GET /v1/models`: `withAliases(catalog.list(), resolver.literalAliases)` (src/catalog/aliases.ts);
 *   the catalog serves the discovered models after its own (`createCatalog({ discovered })`).
 * - The catalog serves a model with deployments when any deployment is usable, a provider with
 *   `api_keys` when any key resolves; every key of a pool is in the redaction of upstream text; a
 *   step's key reaches the platform as written (`writtenKey(provider, step.key.index)`, the
 *   `OutgoingRequest.apiKey` its carrier resolves as it resolves `api_key`).
 */
export { createRouter } from './router.ts';
export type { AttemptHandle, AttemptOutcome, Candidate, Plan, PlanOptions, RestEvent, Router, RouterOptions, Unusable } from './router.ts';
export { createAttemptSequence } from './sequence.ts';
export type { AttemptSequence, Refusal, SequenceOptions, Step } from './sequence.ts';
export { createResolver, compileGlob } from './resolve.ts';
export type { Resolution, Resolver, ResolverOptions, RouteInput } from './resolve.ts';
export { createMemoryRoutingState } from './state.ts';
export type { DeploymentUsage, LocalCounts, MemoryRoutingState, RoutingLease, RoutingState } from './state.ts';
export { createDiscovery, createHttpModelsFetcher, parseModelList } from './discovery.ts';
export type { Discovery, DiscoveryOptions, ModelsFetcher } from './discovery.ts';
export { deploymentId } from './deployments.ts';
export type { Deployment, DeploymentTable, ModelDeployment } from './deployments.ts';
export { keysOf, writtenKey } from './key-pool.ts';
export type { ProviderKey } from './key-pool.ts';
export { scopedConversationKey } from './sticky.ts';
export type { StickyBinding } from './sticky.ts';
export type { DeploymentSnapshot } from './stats.ts';
export type { RestRecord } from './rests.ts';
