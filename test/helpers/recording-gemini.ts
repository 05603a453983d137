/**
 * The recording upstream's Gemini side (./recording-upstream.ts): what Gemini CLI calls, answered
 * as Google's generateContent API answers. `:generateContent` a whole `GenerateContentResponse`,
 * `:streamGenerateContent?alt=sse` the same split into `data:` events (text in two pieces, usage
 * on every event, `finishReason` last); a tool call is one `functionCall` part (no id, as the
 * Gemini API gives none) signed with the turn's reasoning as its `thoughtSignature`, a Gemini 3
 * answer's shape; `:countTokens` an estimate; `GET /v1beta/models` Google's list. Errors in
 * Google's shape.
 */
import type { ServerResponse } from 'node:http';
import { isRecord, records } from '../../src/common/json.ts';
import type { ModelTurn } from './recording-upstream.ts';

/** `/v1beta/models/{model}:{method}` (or `/v1/…`). */
const OPERATION = /^\/v1(?:beta)?\/models\/([^:]+):(generateContent|streamGenerateContent|countTokens)$/;

/** The model and method a Gemini path names, or undefined. */
export function geminiOperation(path: string): { model: string; method: string } | undefined {
  const match = OPERATION.exec(path);
  return match === null ? undefined : { model: decodeURIComponent(match[1] ?? ''), method: match[2] ?? '' };
}

/** The outputs of the function responses the request's last content sends back. */
export function geminiToolOutputs(body: Record<string, unknown>): string[] {
  const last = records(body['contents']).at(-1);
  return records(last?.['parts'])
    .map((part) => part['functionResponse'])
    .filter(isRecord)
    .map((response) => {
      const result = isRecord(response['response']) ? response['response'] : {};
      const output = result['output'] ?? result['content'] ?? result['result'];
      return typeof output === 'string' ? output : JSON.stringify(result);
    });
}

const STATUS_NAMES: Readonly<Record<number, string>> = { 400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE' };

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Google's error body. */
export function geminiError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  send(res, status, { error: { code: status, message, status: STATUS_NAMES[status] ?? 'UNKNOWN' } }, headers);
}

/** Answers one Gemini model call with `turn`; `estimate` counts tokens. */
export function serveGemini(res: ServerResponse, method: string, model: string, turn: ModelTurn, body: Record<string, unknown>, estimate: (value: unknown) => number): void {
  if (method === 'countTokens') {
    send(res, 200, { totalTokens: estimate(body['contents'] ?? body['generateContentRequest']) });
    return;
  }
  if (turn.kind === 'http_error') {
    geminiError(res, turn.status, turn.message, turn.headers);
    return;
  }
  const prompt = estimate(body['contents']);
  const usage = (output: number): Record<string, number> => ({ promptTokenCount: prompt, candidatesTokenCount: output, totalTokenCount: prompt + output });
  const response = (parts: unknown[], output: number, finishReason?: string): Record<string, unknown> => ({
    candidates: [{ content: { parts, role: 'model' }, ...(finishReason === undefined ? {} : { finishReason }), index: 0 }],
    usageMetadata: usage(output),
    modelVersion: model,
    responseId: 'recorded-response-0001',
  });
  const thought = turn.kind !== 'truncated' && turn.reasoning !== undefined ? [{ text: turn.reasoning.summary, thought: true }] : [];
  const signature = turn.kind !== 'truncated' && turn.reasoning !== undefined ? { thoughtSignature: turn.reasoning.encryptedContent } : {};
  const parts = turn.kind === 'tool_call' ? [{ functionCall: { name: turn.name, args: turn.input }, ...signature }] : [{ text: turn.text, ...signature }];
  const output = estimate(parts);
  if (method === 'generateContent') {
    send(res, 200, response([...thought, ...parts], output, 'STOP'));
    return;
  }
  const events: Array<Record<string, unknown>> = [];
  if (thought.length > 0) events.push(response(thought, 0));
  if (turn.kind === 'tool_call') {
    events.push(response(parts, output));
    events.push(response([{ text: '' }], output, 'STOP'));
  } else {
    const middle = Math.ceil(turn.text.length / 2);
    events.push(response([{ text: turn.text.slice(0, middle) }], output));
    if (turn.kind === 'text') events.push(response([{ text: turn.text.slice(middle), ...signature }], output, 'STOP'));
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(events.map((event) => `data: ${JSON.stringify(event)}\r\n\r\n`).join(''));
}

/** Google's model list, for the ids given. */
export function geminiModelList(models: string[]): Record<string, unknown> {
  return {
    models: models.map((id) => ({
      name: `models/${id}`, version: '001', displayName: id, inputTokenLimit: 1_048_576, outputTokenLimit: 65_536,
      supportedGenerationMethods: ['generateContent', 'countTokens'],
    })),
  };
}
