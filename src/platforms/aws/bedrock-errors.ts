/**
 * Bedrock's errors, as its runtime API reference lists them: the exception names, the HTTP status
 * each stands for, and which are worth another attempt. A whole-answer error arrives as an HTTP
 * status with `x-amzn-errortype: ThrottlingException:http://…` and a body `{"message": "…"}`; a
 * stream's error arrives as an `exception` frame whose `:exception-type` is the same name in
 * lower camel case (`throttlingException`) with the same body. Both become one {@link BedrockError}.
 */

/** An error Bedrock answered, in its own terms. `type` is the exception name, PascalCase. */
export interface BedrockError {
  type: string;
  /** The HTTP status Bedrock gives this error (for a stream frame, the one its API reference lists). */
  status: number;
  message: string;
  /** Whether Bedrock's reference says to retry (throttles, unavailability, stream and timeout errors). */
  retryable: boolean;
}

/** Exception name → [HTTP status, retryable], from the Bedrock runtime API reference (InvokeModel, InvokeModelWithResponseStream, Converse, ConverseStream). */
const EXCEPTIONS: Readonly<Record<string, readonly [number, boolean]>> = {
  AccessDeniedException: [403, false],
  InternalServerException: [500, true],
  ModelErrorException: [424, false],
  ModelNotReadyException: [429, true],
  ModelStreamErrorException: [424, true],
  ModelTimeoutException: [408, true],
  ResourceNotFoundException: [404, false],
  ServiceQuotaExceededException: [400, false],
  ServiceUnavailableException: [503, true],
  ThrottlingException: [429, true],
  ValidationException: [400, false],
  // Refusals from AWS's front door, before Bedrock sees the request.
  UnrecognizedClientException: [403, false],
  InvalidSignatureException: [403, false],
  ExpiredTokenException: [403, false],
  IncompleteSignatureException: [403, false],
  MissingAuthenticationTokenException: [403, false],
};

const MAX_MESSAGE_CHARS = 2000;

/** `throttlingException` or `ThrottlingException:http://internal…` → `ThrottlingException`. */
export function exceptionName(raw: string): string {
  const colon = raw.indexOf(':');
  const name = (colon === -1 ? raw : raw.slice(0, colon)).trim();
  return name === '' ? name : `${name[0]?.toUpperCase()}${name.slice(1)}`;
}

/** The status Bedrock's reference gives an exception, or `fallback` for one it does not list. */
export function exceptionStatus(type: string, fallback = 500): number {
  return EXCEPTIONS[exceptionName(type)]?.[0] ?? fallback;
}

/** The message in an error body (`message`, or `Message` as some AWS front ends write it), shortened. */
export function bedrockMessageOf(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === 'object' && parsed !== null) {
      const record = parsed as Record<string, unknown>;
      const message = record['message'] ?? record['Message'];
      if (typeof message === 'string') return message.slice(0, MAX_MESSAGE_CHARS);
    }
  } catch {
    // Not JSON: the text itself, shortened.
  }
  return body.slice(0, MAX_MESSAGE_CHARS);
}

/**
 * A Bedrock error from its parts: the exception name as sent (any case, with or without the
 * `:http://…` suffix), the HTTP status (undefined for a stream frame, which has none of its own),
 * and the message (see {@link bedrockMessageOf} for a body).
 */
export function bedrockErrorOf(rawType: string | undefined, status: number | undefined, message: string): BedrockError {
  const type = rawType === undefined || rawType.trim() === '' ? 'UnknownError' : exceptionName(rawType);
  const known = EXCEPTIONS[type];
  const resolved = status ?? known?.[0] ?? 500;
  const retryable = known?.[1] ?? (resolved === 429 || resolved >= 500);
  return { type, status: resolved, message: message.slice(0, MAX_MESSAGE_CHARS), retryable };
}
