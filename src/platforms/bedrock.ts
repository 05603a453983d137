/**
 * The `bedrock` platform (llmux.md section 8): Claude on Amazon Bedrock through InvokeModel and
 * InvokeModelWithResponseStream, the messages format in Bedrock's envelope (`format: "anthropic"`),
 * and every other Bedrock model through Converse and ConverseStream (`format: "converse"`).
 *
 * - URL: `{endpoint}/model/{upstream_id}/invoke` (`/invoke-with-response-stream` streamed), the model
 *   id URI-encoded as the AWS SDKs send it (`anthropic.claude-sonnet-4-5-20250929-v1:0` →
 *   `…-v1%3A0`, an inference profile ARN's `/` → `%2F`). The endpoint is
 *   `https://bedrock-runtime.{region}.amazonaws.com`, or `base_url` (a VPC endpoint, a proxy).
 * - Body: the messages body without `model` and `stream` (the path says both), with
 *   `anthropic_version: "bedrock-2023-05-31"` and the client's `anthropic-beta` values that Bedrock
 *   accepts (./anthropic-betas.ts) in `anthropic_beta`; no `anthropic-*` header is sent. A Converse
 *   body (`/model/{id}/converse`, `/converse-stream`) goes as the translators wrote it: it has no
 *   member the path says.
 * - Authorisation: AWS Signature Version 4 (service `bedrock`, the provider's region) over the exact
 *   path, headers and body bytes sent, with credentials from the provider's chain
 *   (./aws/credentials.ts), the session token sent and signed; each attempt signed afresh.
 * - Streams: `application/vnd.amazon.eventstream` frames (./aws/bedrock-stream.ts) become the
 *   messages format's SSE events for the relays and the usage tap, or ConverseStream's events as they
 *   are (`event: contentBlockDelta`, …) for the Converse decoder. An exception frame
 *   (`throttlingException`, `modelStreamErrorException`, …) becomes an in-stream `error` event in the
 *   messages format's shape, typed as Anthropic types its errors and naming the exception, which
 *   both the messages and the Converse decoders read and every client format's relay turns into its
 *   own in-stream error.
 * - Errors: `x-amzn-errortype` names the exception, the body is `{"message"}` (./aws/bedrock-errors.ts):
 *   a 429 ThrottlingException is retried then our 429, a 400 ValidationException a 400 with its message.
 */
import { Transform } from 'node:stream';
import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderConfig } from '../config/types.ts';
import { createAwsCredentialChain } from './aws/credentials.ts';
import { signRequest } from './aws/sigv4.ts';
import { createBedrockStreamReader } from './aws/bedrock-stream.ts';
import type { BedrockError } from './aws/bedrock-errors.ts';
import { bedrockErrorOf, bedrockMessageOf } from './aws/bedrock-errors.ts';
import { BEDROCK_BETAS, acceptedBetas } from './anthropic-betas.ts';
import type { Carrier, Platform, UpstreamAnswer, UpstreamCall, UpstreamErrorWords } from './platform.ts';

/** What every Bedrock request body carries (AWS's Claude request reference: required). */
export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

const EVENT_STREAM = 'application/vnd.amazon.eventstream';

/** Bedrock's runtime operations, whole and streamed, by the body they carry. */
const OPERATIONS = {
  /** Claude's messages body (InvokeModel). */
  invoke: { whole: 'invoke', streamed: 'invoke-with-response-stream' },
  /** The Converse body (`format: "converse"`). */
  converse: { whole: 'converse', streamed: 'converse-stream' },
} as const;

/** The path of a call under the endpoint. */
function targetOf(call: UpstreamCall): string {
  const operation = call.format === 'converse' ? OPERATIONS.converse : OPERATIONS.invoke;
  return `/model/${encodeURIComponent(call.upstreamId)}/${call.stream ? operation.streamed : operation.whole}`;
}

/** Anthropic's error type for a status, so clients read a Bedrock exception as they read Anthropic's own. */
function anthropicErrorType(status: number): string {
  switch (status) {
    case 400: return 'invalid_request_error';
    case 403: return 'permission_error';
    case 404: return 'not_found_error';
    case 429: return 'rate_limit_error';
    case 503:
    case 529: return 'overloaded_error';
    default: return 'api_error';
  }
}

/** A Bedrock stream's exception as the messages format's in-stream error event. */
export function bedrockErrorEvent(error: BedrockError): string {
  const data = JSON.stringify({ type: 'error', error: { type: anthropicErrorType(error.status), message: `Amazon Bedrock ${error.type}: ${error.message}` } });
  return `event: error\ndata: ${data}\n\n`;
}

/**
 * An answer's event-stream body as SSE bytes: a stream of its own that carries the answer's status
 * and headers. Failures of the answer become its errors; destroying it stops the answer.
 */
function eventStreamAsSse(answer: UpstreamAnswer, operation: 'invoke' | 'converse'): UpstreamAnswer {
  const reader = createBedrockStreamReader({
    operation,
    onSse: (text) => sse.push(text),
    onError: (error) => sse.push(bedrockErrorEvent(error)),
  });
  const sse = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      reader.feed(chunk);
      done();
    },
    flush(done) {
      reader.end();
      done();
    },
  });
  answer.on('error', (err) => sse.destroy(err));
  answer.on('aborted', () => sse.destroy(new Error('the answer was cut off')));
  sse.once('close', () => {
    if (answer.complete !== true) answer.destroy();
  });
  answer.pipe(sse);
  const headers: IncomingHttpHeaders = { ...answer.headers, 'content-type': 'text/event-stream' };
  delete headers['content-length'];
  const framed = Object.assign(sse, { statusCode: answer.statusCode, headers });
  Object.defineProperty(framed, 'complete', { get: () => answer.complete });
  return framed;
}

/** Bedrock's error answer: the exception in `x-amzn-errortype`, the message in the body. */
export function readBedrockError(status: number, headers: IncomingHttpHeaders, text: string): UpstreamErrorWords {
  const written = headers['x-amzn-errortype'];
  const error = bedrockErrorOf(typeof written === 'string' ? written : undefined, status, bedrockMessageOf(text));
  const type = error.type === 'UnknownError' ? undefined : error.type;
  return { status, message: error.message, type, code: type };
}

/** Where a Bedrock provider's credentials are set, in words without a value. */
function credentialSettingOf(provider: ProviderConfig): string {
  const at = `providers.${provider.id}`;
  if (provider.bedrock?.credentials !== undefined) return `${at}.credentials in the llmux config`;
  if (provider.bedrock?.profile !== undefined) return `${at}.profile ("${provider.bedrock.profile}") in the shared credentials file`;
  return `the AWS credentials llmux finds for ${at} (the AWS_* variables, ~/.aws/credentials, the container or instance role)`;
}

export const bedrockPlatform: Platform = {
  name: 'bedrock',
  bind(provider, services): Carrier {
    const settings = provider.bedrock;
    if (settings === undefined) throw new Error(`provider "${provider.id}" is on platform bedrock without its settings`);
    const endpoint = new URL(provider.baseUrl);
    const host = endpoint.host;
    const basePath = endpoint.pathname.replace(/\/+$/, '');
    const chain = createAwsCredentialChain({
      providerId: provider.id,
      credentials: settings.credentials,
      profile: settings.profile,
      env: services.env,
      now: services.now,
    });
    const accepted = new Set(settings.betas ?? BEDROCK_BETAS);
    // A provider speaks one format: its streams are read as that operation's.
    const streams = provider.format === 'converse' ? 'converse' : 'invoke';
    return {
      provider,
      endpoint: provider.baseUrl,
      credentialSetting: credentialSettingOf(provider),
      target: targetOf,
      envelope(call) {
        if (call.format === 'converse') return undefined;
        const betas = acceptedBetas(call.formatHeaders['anthropic-beta'], accepted);
        return new Map<string, unknown>([
          ['model', undefined],
          ['stream', undefined],
          ['anthropic_version', BEDROCK_ANTHROPIC_VERSION],
          ['anthropic_beta', betas.length === 0 ? undefined : betas],
        ]);
      },
      // The Anthropic Bedrock SDK's accept; the format's headers travel in the body.
      headers: () => ({ accept: 'application/json' }),
      authorise(request) {
        return chain.get().then((credentials) => {
          const query = request.target.indexOf('?');
          const signature = signRequest(
            {
              method: 'POST',
              path: basePath + (query === -1 ? request.target : request.target.slice(0, query)),
              query: query === -1 ? '' : request.target.slice(query + 1),
              // What the transport sends besides these (content-length, accept-encoding, the config's
              // headers) is left unsigned, as SigV4 allows.
              headers: { host, 'content-type': 'application/json', ...request.headers },
              body: request.body,
            },
            { credentials, region: settings.region, service: 'bedrock', timeMs: services.now() },
          );
          Object.assign(request.headers, signature.headers);
        });
      },
      events(answer) {
        const contentType = String(answer.headers['content-type'] ?? '');
        if (contentType.includes(EVENT_STREAM)) return eventStreamAsSse(answer, streams);
        // A gateway in front of Bedrock that already speaks SSE.
        return contentType.includes('text/event-stream') ? answer : undefined;
      },
      readError: readBedrockError,
      async credentials() {
        const described = await chain.describe();
        if (!described.ok) return described;
        const expires = described.expiresAtMs === undefined ? '' : ` (temporary, until ${new Date(described.expiresAtMs).toISOString()})`;
        return { ok: true, detail: `${described.detail}${expires}` };
      },
      secrets: () => chain.secrets(),
    };
  },
};
