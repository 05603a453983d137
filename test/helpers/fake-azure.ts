/**
 * A fake Azure OpenAI resource: a real `node:http` server on 127.0.0.1, port 0, that checks what
 * Azure checks, and answers as Azure does.
 *
 * - Authorisation: `api-key: <key>`, or `Authorization: Bearer <Entra token>`; Azure's 401 otherwise.
 * - The v1 surface under `/openai/v1`: `POST /chat/completions` and `/responses`, the deployment as
 *   the body's `model`; an `api-version` query is refused here, as llmux must send none there.
 * - Classic deployments under `/openai`: `POST /deployments/{name}/chat/completions?api-version=…`
 *   and `POST /responses?api-version=…` (the deployment as `model`); an api-version the fake does
 *   not know, or none, is Azure's 404 "Resource not found".
 * - `GET /openai/v1/models` and `/openai/models?api-version=…` list the deployments (`llmux doctor`).
 * - A deployment it does not have is 404 `DeploymentNotFound`. A last user message holding
 *   `FILTER-ME` is refused by the content filter: 400 `content_filter` with its `innererror`.
 * - Chat streams start with the `prompt_filter_results` chunk Azure sends first
 *   (test/fixtures/upstream/azure-openai-stream-first-chunk-prompt-filter.sse); answers carry
 *   `content_filter_results`.
 */
import http from 'node:http';
import { fixture } from './fake-upstream.ts';
import { chatStream, chatWhole, responsesUpstream } from './scripted-answers.ts';
import type { ScriptedAnswer } from './scripted-answers.ts';
import { listenOnLoopback } from './loopback.ts';

export type AzureOperation = 'chat' | 'responses' | 'models';

export interface AzureSeenRequest {
  operation: AzureOperation;
  surface: 'v1' | 'classic';
  deployment: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface FakeAzureOptions {
  apiKey?: string;
  adToken?: string;
  deployments: readonly string[];
  /** The api-versions classic paths accept; default 2024-10-21 and 2025-03-01-preview. */
  apiVersions?: readonly string[];
  script?: (body: Record<string, unknown>, seen: AzureSeenRequest) => ScriptedAnswer;
}

export interface FakeAzure {
  /** The resource's address: `{url}/openai/v1` is the v1 surface, `{url}/openai` the classic one. */
  url: string;
  requests: AzureSeenRequest[];
  refusals: string[];
  /** The next model requests' answers instead of their scripts: a status and its body. */
  faults: Array<{ status: number; body: unknown; headers?: Record<string, string> }>;
  close(): Promise<void>;
}

const PROMPT_FILTER_CHUNK = fixture('azure-openai-stream-first-chunk-prompt-filter.sse').toString('utf8');
const SAFE = { hate: { filtered: false, severity: 'safe' }, self_harm: { filtered: false, severity: 'safe' }, sexual: { filtered: false, severity: 'safe' }, violence: { filtered: false, severity: 'safe' } };
const CONTENT_FILTERED = {
  error: {
    message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
    type: null,
    param: 'prompt',
    code: 'content_filter',
    status: 400,
    innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { ...SAFE, violence: { filtered: true, severity: 'high' } } },
  },
};

function lastUserText(body: Record<string, unknown>): string {
  const items = Array.isArray(body['messages']) ? body['messages'] : Array.isArray(body['input']) ? body['input'] : typeof body['input'] === 'string' ? [{ role: 'user', content: body['input'] }] : [];
  const users = (items as Array<Record<string, unknown>>).filter((item) => item['role'] === 'user');
  return JSON.stringify(users[users.length - 1]?.['content'] ?? '');
}

/** Starts the fake; close it when done. */
export async function startFakeAzure(options: FakeAzureOptions): Promise<FakeAzure> {
  const requests: AzureSeenRequest[] = [];
  const refusals: string[] = [];
  const faults: FakeAzure['faults'] = [];
  const versions = new Set(options.apiVersions ?? ['2024-10-21', '2025-03-01-preview']);
  const script = options.script ?? ((): ScriptedAnswer => ({ text: 'Hello from the Azure fake.' }));

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    if (status >= 400) refusals.push(JSON.stringify(body));
    res.writeHead(status, { 'content-type': 'application/json', 'apim-request-id': 'fake-request', ...headers });
    res.end(JSON.stringify(body));
  };

  const server = http.createServer((req, res) => {
    const pieces: Buffer[] = [];
    req.on('data', (piece: Buffer) => pieces.push(piece));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const path = url.pathname;
      const keyOk = options.apiKey !== undefined && req.headers['api-key'] === options.apiKey;
      const tokenOk = options.adToken !== undefined && req.headers['authorization'] === `Bearer ${options.adToken}`;
      if (!keyOk && !tokenOk) {
        return send(res, 401, { error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.' } });
      }
      let surface: 'v1' | 'classic';
      let rest: string;
      if (path.startsWith('/openai/v1/')) {
        surface = 'v1';
        rest = path.slice('/openai/v1'.length);
        if (url.searchParams.has('api-version')) return send(res, 400, { error: { code: 'BadRequest', message: 'The v1 API takes no api-version (the fake checks llmux sends none)' } });
      } else if (path.startsWith('/openai/')) {
        surface = 'classic';
        rest = path.slice('/openai'.length);
        if (!versions.has(url.searchParams.get('api-version') ?? '')) return send(res, 404, { error: { code: '404', message: 'Resource not found' } });
      } else {
        return send(res, 404, { error: { code: '404', message: 'Resource not found' } });
      }
      if (req.method === 'GET' && rest === '/models') {
        requests.push({ operation: 'models', surface, deployment: '', path, query: url.searchParams, headers: req.headers, body: {} });
        return send(res, 200, { object: 'list', data: options.deployments.map((id) => ({ id, object: 'model' })) });
      }
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(pieces).toString('utf8')) as Record<string, unknown>;
      } catch {
        return send(res, 400, { error: { code: 'BadRequest', message: 'Invalid JSON' } });
      }
      const classicChat = /^\/deployments\/([^/]+)\/chat\/completions$/.exec(rest);
      let operation: AzureOperation;
      let deployment: string;
      if (req.method === 'POST' && surface === 'v1' && rest === '/chat/completions') {
        operation = 'chat';
        deployment = String(body['model'] ?? '');
      } else if (req.method === 'POST' && surface === 'classic' && classicChat !== null) {
        operation = 'chat';
        deployment = decodeURIComponent(classicChat[1] ?? '');
      } else if (req.method === 'POST' && rest === '/responses') {
        operation = 'responses';
        deployment = String(body['model'] ?? '');
      } else {
        return send(res, 404, { error: { code: '404', message: 'Resource not found' } });
      }
      const seen: AzureSeenRequest = { operation, surface, deployment, path, query: url.searchParams, headers: req.headers, body };
      requests.push(seen);
      if (!options.deployments.includes(deployment)) {
        return send(res, 404, { error: { code: 'DeploymentNotFound', message: 'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.' } });
      }
      if (lastUserText(body).includes('FILTER-ME')) return send(res, 400, CONTENT_FILTERED);
      const fault = faults.shift();
      if (fault !== undefined) return send(res, fault.status, fault.body, fault.headers);
      const answer = script(body, seen);
      const stream = body['stream'] === true;
      if (operation === 'responses') {
        const upstream = responsesUpstream(answer);
        if (!stream) return send(res, 200, upstream.whole);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(upstream.stream);
        return;
      }
      if (!stream) {
        const whole = chatWhole(answer);
        return send(res, 200, { ...whole, model: deployment, prompt_filter_results: [{ prompt_index: 0, content_filter_results: SAFE }] });
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(PROMPT_FILTER_CHUNK + chatStream(answer));
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
