/**
 * A fake Vertex AI endpoint: a real `node:http` server on 127.0.0.1, port 0, that checks what Vertex
 * checks before it answers, and answers as Vertex does.
 *
 * - Every request needs `Authorization: Bearer <token>` with a token the fake OAuth server issued,
 *   unexpired and not revoked (test/helpers/fake-google-oauth.ts `isIssued`); Google's 401
 *   `UNAUTHENTICATED` otherwise.
 * - Paths live under `/v1/projects/{project}/locations/{location}` (404 for another project or
 *   location): Claude at `/publishers/anthropic/models/{model}:rawPredict` / `:streamRawPredict`,
 *   whose body must have no `model`, `anthropic_version: "vertex-2023-10-16"`, and (streamed)
 *   `stream: true`; whose `anthropic-beta` header may hold only the values Vertex takes there and
 *   whose body's `anthropic_beta` only those it takes there (Anthropic's 400 "Unexpected value(s)"
 *   otherwise, as Vertex answers Claude Code's betas); Gemini at
 *   `/publishers/google/models/{model}:generateContent` / `:streamGenerateContent`, whose body has
 *   no `model` and whose stream must be asked for with `?alt=sse` (Vertex answers a JSON array
 *   otherwise, which llmux does not read); and the OpenAI-compatible
 *   `/endpoints/openapi/chat/completions`, whose `model` must be `publisher/model`.
 * - Tests script answers from the body and queue faults (a status and Google's error body).
 */
import http from 'node:http';
import type { FakeGoogleOAuth } from './fake-google-oauth.ts';
import { chatStream, chatWhole, geminiStream, geminiWhole, messagesStream, messagesWhole } from './scripted-answers.ts';
import type { ScriptedAnswer } from './scripted-answers.ts';
import { listenOnLoopback } from './loopback.ts';

export type VertexOperation = 'rawPredict' | 'streamRawPredict' | 'chat' | 'generateContent' | 'streamGenerateContent';

export interface VertexSeenRequest {
  operation: VertexOperation;
  /** The model named in the path (Claude) or the body (chat). */
  model: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** The bearer token it carried. */
  token: string;
}

export interface FakeVertexOptions {
  oauth: FakeGoogleOAuth;
  project: string;
  location: string;
  script?: (body: Record<string, unknown>, seen: VertexSeenRequest) => ScriptedAnswer;
  /** The `anthropic-beta` values taken in the header; default a few Vertex is known to take (written here, not read from src/). */
  headerBetas?: readonly string[];
  /** The values taken only in the body's `anthropic_beta`. */
  bodyBetas?: readonly string[];
}

export interface FakeVertex {
  /** The base URL: what comes before `/v1/projects/…`. */
  url: string;
  requests: VertexSeenRequest[];
  /** Each refusal: why (for test failure messages). */
  refusals: string[];
  /** The next model requests' answers instead of their scripts: a status and its body. */
  faults: Array<{ status: number; body: unknown }>;
  close(): Promise<void>;
}

const HEADER_BETAS = ['interleaved-thinking-2025-05-14', 'context-management-2025-06-27', 'computer-use-2025-01-24', 'tool-search-tool-2025-10-19', 'web-search-2025-03-05'];
const BODY_BETAS = ['context-1m-2025-08-07'];

function googleError(status: number, state: string, message: string): { status: number; body: unknown } {
  return { status, body: { error: { code: status, message, status: state } } };
}

function anthropicError(status: number, message: string): { status: number; body: unknown } {
  return { status, body: { type: 'error', error: { type: 'invalid_request_error', message } } };
}

/** Starts the fake; close it when done. */
export async function startFakeVertex(options: FakeVertexOptions): Promise<FakeVertex> {
  const requests: VertexSeenRequest[] = [];
  const refusals: string[] = [];
  const faults: FakeVertex['faults'] = [];
  const headerBetas = new Set(options.headerBetas ?? HEADER_BETAS);
  const bodyBetas = new Set(options.bodyBetas ?? BODY_BETAS);
  const script = options.script ?? ((): ScriptedAnswer => ({ text: 'Hello from the Vertex fake.' }));
  const base = `/v1/projects/${options.project}/locations/${options.location}`;

  const refuse = (res: http.ServerResponse, refusal: { status: number; body: unknown }): void => {
    refusals.push(JSON.stringify(refusal.body));
    res.writeHead(refusal.status, { 'content-type': 'application/json; charset=UTF-8' });
    res.end(JSON.stringify(refusal.body));
  };

  /** Why a Claude request is refused, or undefined. */
  const claudeProblem = (headers: http.IncomingHttpHeaders, body: Record<string, unknown>, streamed: boolean): { status: number; body: unknown } | undefined => {
    if ('model' in body) return anthropicError(400, 'model: Extra inputs are not permitted');
    if (body['anthropic_version'] !== 'vertex-2023-10-16') return anthropicError(400, 'anthropic_version: Input should be \'vertex-2023-10-16\'');
    if (streamed && body['stream'] !== true) return anthropicError(400, 'streamRawPredict needs "stream": true');
    const header = String(headers['anthropic-beta'] ?? '').split(',').map((v) => v.trim()).filter((v) => v !== '');
    const badHeader = header.filter((v) => !headerBetas.has(v));
    if (badHeader.length > 0) {
      return anthropicError(400, `Unexpected value(s) ${badHeader.map((v) => `\`${v}\``).join(', ')} for the \`anthropic-beta\` header. Please consult our documentation at docs.anthropic.com or try again without the header.`);
    }
    const inBody = Array.isArray(body['anthropic_beta']) ? (body['anthropic_beta'] as unknown[]) : [];
    const badBody = inBody.filter((v) => typeof v !== 'string' || !bodyBetas.has(v));
    if (badBody.length > 0) return anthropicError(400, `anthropic_beta: unexpected value(s) ${badBody.map(String).join(', ')}`);
    return undefined;
  };

  const server = http.createServer((req, res) => {
    const pieces: Buffer[] = [];
    req.on('data', (piece: Buffer) => pieces.push(piece));
    req.on('end', () => {
      const [path = '/', query = ''] = (req.url ?? '/').split('?');
      const authorization = String(req.headers['authorization'] ?? '');
      const token = authorization.startsWith('Bearer ') ? authorization.slice(7) : '';
      if (!options.oauth.isIssued(token)) {
        return refuse(res, googleError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.'));
      }
      if (req.method !== 'POST' || !path.startsWith(`${base}/`)) return refuse(res, googleError(404, 'NOT_FOUND', `No endpoint at ${req.method} ${path}`));
      const rest = path.slice(base.length);
      const claude = /^\/publishers\/anthropic\/models\/([^/:]+):(rawPredict|streamRawPredict)$/.exec(rest) ?? /^\/publishers\/google\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(rest);
      if (claude === null && rest !== '/endpoints/openapi/chat/completions') return refuse(res, googleError(404, 'NOT_FOUND', `No endpoint at ${rest}`));
      if (claude?.[2] === 'streamGenerateContent' && !new URLSearchParams(query).has('alt', 'sse')) return refuse(res, googleError(400, 'INVALID_ARGUMENT', 'this fake answers Gemini streams as SSE only: ask with alt=sse'));
      let body: Record<string, unknown>;
      try {
        const parsed: unknown = JSON.parse(Buffer.concat(pieces).toString('utf8'));
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
        body = parsed as Record<string, unknown>;
      } catch {
        return refuse(res, googleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.'));
      }
      const operation: VertexOperation = claude === null ? 'chat' : (claude[2] as VertexOperation);
      const model = claude === null ? String(body['model'] ?? '') : decodeURIComponent(claude[1] ?? '');
      const seen: VertexSeenRequest = { operation, model, path, headers: req.headers, body, token };
      requests.push(seen);
      if (operation === 'chat' && !/^[a-z0-9-]+\/\S+$/.test(model)) {
        return refuse(res, googleError(400, 'INVALID_ARGUMENT', `Invalid model "${model}": use publisher/model, e.g. google/gemini-2.5-flash`));
      }
      const gemini = operation === 'generateContent' || operation === 'streamGenerateContent';
      if (gemini && 'model' in body) return refuse(res, googleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received. Unknown name "model": Cannot find field.'));
      const problem = operation === 'chat' || gemini ? undefined : claudeProblem(req.headers, body, operation === 'streamRawPredict');
      if (problem !== undefined) return refuse(res, problem);
      const fault = faults.shift();
      if (fault !== undefined) return refuse(res, fault);
      const answer = script(body, seen);
      const streamed = operation === 'streamRawPredict' || operation === 'streamGenerateContent' || (operation === 'chat' && body['stream'] === true);
      if (!streamed) {
        res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
        res.end(JSON.stringify(operation === 'chat' ? { ...chatWhole(answer), model } : gemini ? { ...geminiWhole(answer), modelVersion: model } : { ...messagesWhole(answer), model }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=UTF-8' });
      res.end(operation === 'chat' ? chatStream(answer) : gemini ? geminiStream(answer) : messagesStream(answer));
    });
  });
  const { url, close } = await listenOnLoopback(server);
  return {
    url,
    requests,
    refusals,
    faults,
    close,
  };
}
