/**
 * What a finished request leaves for usage accounting (llmux.md section 7): its usage and cost in
 * the ledger, and with telemetry on, one span. The gateway calls `observe` once per request, when
 * its response has closed and its handler has settled (beside the log line and the metrics), so a
 * streamed answer is counted with all of its tokens, and a request that ran a budget out is
 * counted when it ends.
 *
 * - The ledger gets every request that an upstream answered with usage (`record.usage`), under
 *   the key, the catalog id of the model that answered, and the cost the pipeline priced.
 * - The span exporter gets every model request (`record.format` is set), answered or refused, with
 *   only what the conventions ask for: models and provider from the catalog and config, token
 *   counts, timings, status and error code. No key id, no body (see `otlp.ts`).
 *
 * Both are synchronous, in-memory and bounded: nothing here waits on a disk or a collector.
 */
import type { RequestRecord } from '../gateway/request-record.ts';
import type { UsageLedger } from './ledger.ts';
import type { SpanExporter } from './otlp.ts';

/** The request, as the gateway saw it from outside. */
export interface FinishedRequest {
  requestId: string;
  method: string;
  status: number;
  startedMs: number;
  endedMs: number;
  /** The client's W3C `traceparent` header, if any. */
  traceparent: string | undefined;
}

export interface UsageRecorderOptions {
  ledger: UsageLedger;
  /** Present when `telemetry.otlp_endpoint` is configured. */
  exporter?: SpanExporter | undefined;
}

export interface UsageRecorder {
  observe(request: FinishedRequest, record: RequestRecord): void;
}

/**
 * `gen_ai.provider.name` well-known values (OpenTelemetry GenAI conventions) for the built-in
 * provider ids that have one; other providers (Together, Fireworks, OpenRouter, Cerebras, Ollama,
 * configured ones) keep their configured id, as does the built-in echo model's `llmux`.
 */
const GEN_AI_PROVIDER_NAMES: Readonly<Record<string, string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  gemini: 'gcp.gemini',
  mistral: 'mistral_ai',
  groq: 'groq',
  deepseek: 'deepseek',
  xai: 'x_ai',
};

/** The `gen_ai.provider.name` of a configured provider id. */
export function genAiProviderName(providerId: string): string {
  return Object.hasOwn(GEN_AI_PROVIDER_NAMES, providerId) ? GEN_AI_PROVIDER_NAMES[providerId] as string : providerId;
}

/** The provider a request reached: the one that answered, else the last one tried. */
function providerOf(record: RequestRecord): string | undefined {
  return record.provider ?? record.attempts[record.attempts.length - 1]?.provider;
}

export function createUsageRecorder(options: UsageRecorderOptions): UsageRecorder {
  const { ledger, exporter } = options;
  return {
    observe(request, record) {
      const { usage, keyId } = record;
      if (usage !== undefined && keyId !== undefined && record.provider !== undefined && record.model !== undefined) {
        ledger.record({
          keyId,
          model: record.model,
          at: request.endedMs,
          inputTokens: usage.inputTokens,
          outputTokens: usage.outputTokens,
          cacheReadTokens: usage.cacheReadTokens,
          cacheCreationTokens: usage.cacheCreationTokens,
          costUsd: record.costUsd ?? 0,
        });
      }
      // The ledger counts the cost now (or, shared, once it is flushed): the budget stops holding it.
      record.budgetHold?.release();
      if (exporter === undefined || record.format === undefined || record.route === undefined) return;
      const provider = providerOf(record);
      exporter.record({
        startMs: request.startedMs,
        endMs: request.endedMs,
        requestModel: record.requestedModel,
        responseModel: record.provider === undefined ? undefined : record.model,
        provider: provider === undefined ? undefined : genAiProviderName(provider),
        inputTokens: usage?.inputTokens,
        outputTokens: usage?.outputTokens,
        cacheReadTokens: usage?.cacheReadTokens,
        cacheCreationTokens: usage?.cacheCreationTokens,
        timeToFirstByteMs: record.ttfbMs,
        httpRoute: record.route,
        httpStatus: request.status,
        httpMethod: request.method,
        errorType: record.errorCode ?? (record.streamError === undefined ? undefined : 'stream_error'),
        requestId: request.requestId,
        costUsd: record.costUsd,
        traceparent: request.traceparent,
      });
    },
  };
}
