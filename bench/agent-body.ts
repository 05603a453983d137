/**
 * A coding agent's turn (issue 15): the messages request Claude Code sends on every turn of a long
 * session, about 200 KB. Its shape follows that traffic: a short and a long system block (cached),
 * a dozen tool definitions with JSON schemas, then the history: user prompts with
 * `<system-reminder>` text, assistant turns with signed thinking, prose and a `tool_use`, and user
 * turns with the `tool_result` (file listings with Claude Code's `     1→` line numbers, command
 * output, search hits). The arrow makes the text non-Latin-1, as real history is, which costs
 * decoders and serialisers more than ASCII would.
 *
 * Deterministic: the same call gives the same bytes, so every proxy and every run sees one body.
 */

/** Size the history grows to, in bytes of the JSON body. */
export const AGENT_BODY_BYTES = 200 * 1024;

/** A small deterministic generator (mulberry32): text that does not repeat, the same every run. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PROSE = [
  'the', 'request', 'handler', 'reads', 'the', 'body', 'once', 'and', 'validates', 'every', 'field', 'before', 'it', 'goes',
  'upstream', 'so', 'a', 'client', 'sees', 'which', 'path', 'was', 'wrong', 'tests', 'cover', 'each', 'rule', 'with', 'a',
  'fixture', 'from', 'a', 'recorded', 'provider', 'answer', 'then', 'the', 'stream', 'is', 'relayed', 'as', 'bytes', 'arrive',
  'without', 'buffering', 'I', 'will', 'check', 'whether', 'this', 'function', 'returns', 'early', 'when', 'the', 'limit',
];
const CODE = [
  'const', 'let', 'return', 'if', '(', ')', '{', '}', 'await', 'request', 'body', 'limits', 'export', 'function', 'string',
  'number', 'undefined', '=>', '===', '!==', 'options', 'config', 'res.end()', 'Buffer.from(text)', 'JSON.parse(text)',
  'throw new GatewayError(400)', "'invalid_parameters'", '// why: a stream must not buffer', 'for (const item of items)',
];

function words(next: () => number, vocabulary: readonly string[], count: number): string {
  const out: string[] = [];
  for (let i = 0; i < count; i++) out.push(vocabulary[Math.floor(next() * vocabulary.length)] as string);
  return out.join(' ');
}

/** A file as Claude Code's Read tool shows it: right-aligned line numbers and an arrow. */
function fileListing(next: () => number, lines: number): string {
  const out: string[] = [];
  for (let i = 1; i <= lines; i++) out.push(`${String(i).padStart(6)}\u2192${'  '.repeat(Math.floor(next() * 4))}${words(next, CODE, 3 + Math.floor(next() * 9))}`);
  return out.join('\n');
}

function commandOutput(next: () => number, lines: number): string {
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    out.push(next() < 0.8
      ? `\u2714 ${words(next, PROSE, 6 + Math.floor(next() * 6))} (${(next() * 40).toFixed(3)}ms)`
      : `\u2716 ${words(next, PROSE, 5)}\n    AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n    + actual - expected\n    + ${Math.floor(next() * 500)}\n    - ${Math.floor(next() * 500)}`);
  }
  return out.join('\n');
}

function signature(next: () => number, length: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(next() * 64)];
  return `${out}==`;
}

function tool(name: string, description: string, properties: Record<string, unknown>, required: string[]): Record<string, unknown> {
  return {
    name,
    description,
    input_schema: { type: 'object', properties, required, additionalProperties: false, $schema: 'http://json-schema.org/draft-07/schema#' },
  };
}

function tools(next: () => number): Record<string, unknown>[] {
  const text = (description: string): Record<string, unknown> => ({ type: 'string', description });
  const long = (sentences: number): string => Array.from({ length: sentences }, () => `${words(next, PROSE, 14)}.`).join(' ');
  return [
    tool('Task', long(40), { description: text('A short (3-5 word) description of the task'), prompt: text('The task for the agent to perform'), subagent_type: text('The type of specialized agent to use') }, ['description', 'prompt', 'subagent_type']),
    tool('Bash', long(60), { command: text('The command to execute'), timeout: { type: 'number', description: 'Optional timeout in milliseconds (max 600000)' }, description: text('Clear, concise description of what this command does'), run_in_background: { type: 'boolean' } }, ['command']),
    tool('Glob', long(12), { pattern: text('The glob pattern to match files against'), path: text('The directory to search in') }, ['pattern']),
    tool('Grep', long(25), {
      pattern: text('The regular expression pattern to search for'), path: text('File or directory to search in'), glob: text('Glob pattern to filter files'),
      output_mode: { type: 'string', enum: ['content', 'files_with_matches', 'count'] }, '-i': { type: 'boolean' }, '-n': { type: 'boolean' }, head_limit: { type: 'number' },
    }, ['pattern']),
    tool('LS', long(6), { path: text('The absolute path to the directory to list'), ignore: { type: 'array', items: { type: 'string' } } }, ['path']),
    tool('Read', long(18), { file_path: text('The absolute path to the file to read'), offset: { type: 'number' }, limit: { type: 'number' } }, ['file_path']),
    tool('Edit', long(16), { file_path: text('The absolute path to the file to modify'), old_string: text('The text to replace'), new_string: text('The text to replace it with'), replace_all: { type: 'boolean', default: false } }, ['file_path', 'old_string', 'new_string']),
    tool('MultiEdit', long(22), {
      file_path: text('The absolute path to the file to modify'),
      edits: { type: 'array', minItems: 1, items: { type: 'object', properties: { old_string: text('The text to replace'), new_string: text('The replacement'), replace_all: { type: 'boolean' } }, required: ['old_string', 'new_string'], additionalProperties: false } },
    }, ['file_path', 'edits']),
    tool('Write', long(10), { file_path: text('The absolute path to the file to write'), content: text('The content to write to the file') }, ['file_path', 'content']),
    tool('WebFetch', long(14), { url: { type: 'string', format: 'uri' }, prompt: text('The prompt to run on the fetched content') }, ['url', 'prompt']),
    tool('TodoWrite', long(45), {
      todos: { type: 'array', items: { type: 'object', properties: { content: { type: 'string', minLength: 1 }, status: { type: 'string', enum: ['pending', 'in_progress', 'completed'] }, activeForm: { type: 'string', minLength: 1 } }, required: ['content', 'status', 'activeForm'], additionalProperties: false } },
    }, ['todos']),
    tool('WebSearch', long(9), { query: { type: 'string', minLength: 2 }, allowed_domains: { type: 'array', items: { type: 'string' } }, blocked_domains: { type: 'array', items: { type: 'string' } } }, ['query']),
  ];
}

const TOOL_CALLS = ['Read', 'Bash', 'Grep', 'Edit', 'Glob', 'TodoWrite'] as const;

function toolInput(name: (typeof TOOL_CALLS)[number], next: () => number, turn: number): Record<string, unknown> {
  switch (name) {
    case 'Read': return { file_path: `/home/dev/project/src/module-${turn}.ts` };
    case 'Bash': return { command: `node --import tsx --test test/module-${turn}.test.ts`, description: 'Run the tests of the module' };
    case 'Grep': return { pattern: `function ${words(next, CODE, 1)}`, path: '/home/dev/project/src', output_mode: 'content', '-n': true };
    case 'Edit': return { file_path: `/home/dev/project/src/module-${turn}.ts`, old_string: words(next, CODE, 20), new_string: words(next, CODE, 24) };
    case 'Glob': return { pattern: 'src/**/*.ts' };
    case 'TodoWrite': return { todos: [{ content: words(next, PROSE, 6), status: 'completed', activeForm: words(next, PROSE, 5) }, { content: words(next, PROSE, 7), status: 'in_progress', activeForm: words(next, PROSE, 5) }] };
  }
}

function toolResult(name: (typeof TOOL_CALLS)[number], next: () => number): string {
  switch (name) {
    case 'Read': return fileListing(next, 60 + Math.floor(next() * 120));
    case 'Bash': return commandOutput(next, 20 + Math.floor(next() * 40));
    case 'Grep': return Array.from({ length: 15 + Math.floor(next() * 25) }, (_, i) => `src/module-${i}.ts:${Math.floor(next() * 400)}:${words(next, CODE, 8)}`).join('\n');
    case 'Edit': return `The file has been updated. Here's the result of running \`cat -n\` on a snippet of the edited file:\n${fileListing(next, 12)}`;
    case 'Glob': return Array.from({ length: 40 }, (_, i) => `/home/dev/project/src/module-${i}.ts`).join('\n');
    case 'TodoWrite': return 'Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress.';
  }
}

/**
 * A messages request of about {@link AGENT_BODY_BYTES} bytes for `model`, shaped like a coding
 * agent's turn. `stream` as Claude Code sends it (true); the CPU scenarios ask for a whole answer
 * so that what is measured is the request's own cost, not the stream's.
 */
/** Bodies made so far: growing one to size takes some milliseconds, and the runner asks often. */
const made = new Map<string, string>();

export function agentMessagesBody(model: string, stream: boolean, bytes = AGENT_BODY_BYTES): string {
  const key = `${model}\n${stream}\n${bytes}`;
  let body = made.get(key);
  if (body === undefined) {
    body = makeAgentBody(model, stream, bytes);
    made.set(key, body);
  }
  return body;
}

/** The turn grown until it is at least `bytes` long (the system prompt and tools alone are ~25 KB). */
function makeAgentBody(model: string, stream: boolean, bytes: number): string {
  const next = random(15);
  const system = [
    { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } },
    { type: 'text', text: Array.from({ length: 180 }, () => `${words(next, PROSE, 16)}.`).join(' '), cache_control: { type: 'ephemeral' } },
  ];
  const messages: Record<string, unknown>[] = [{
    role: 'user',
    content: [
      { type: 'text', text: `<system-reminder>\n${words(next, PROSE, 120)}\n</system-reminder>` },
      { type: 'text', text: 'The tests in test/module-3.test.ts fail since the last change; find out why and fix it.', cache_control: { type: 'ephemeral' } },
    ],
  }];
  const head = {
    model,
    max_tokens: 32000,
    temperature: 1,
    system,
    tools: tools(next),
    metadata: { user_id: 'user_4f1c9e2ab3d8_account_7e0b2c41_session_9a8d7f6e-5c4b-3a29-1807-f6e5d4c3b2a1' },
  };
  const size = (): number => Buffer.byteLength(JSON.stringify({ ...head, messages, stream }));
  for (let turn = 0; size() < bytes; turn++) {
    const name = TOOL_CALLS[turn % TOOL_CALLS.length] as (typeof TOOL_CALLS)[number];
    const id = `toolu_01${signature(next, 22).slice(0, 22).replace(/[+/]/g, 'x')}`;
    messages.push({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: words(next, PROSE, 40 + Math.floor(next() * 60)), signature: signature(next, 300) },
        { type: 'text', text: words(next, PROSE, 10 + Math.floor(next() * 30)) },
        { type: 'tool_use', id, name, input: toolInput(name, next, turn) },
      ],
    });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: toolResult(name, next) }] });
  }
  const last = messages[messages.length - 1] as { content: Record<string, unknown>[] };
  // Claude Code marks the newest turn for the prompt cache.
  last.content.push({ type: 'text', text: 'Continue.', cache_control: { type: 'ephemeral' } });
  return JSON.stringify({ ...head, messages, stream });
}

/**
 * A session's next turns after {@link agentMessagesBody}'s: `count` bodies, each its last with one
 * more exchange (an assistant turn with its tool call, the tool's result) and the cache breakpoint
 * moved to the newest message, as Claude Code sends them.
 */
export function agentTurns(model: string, count = 8, stream = false): string[] {
  const turns: string[] = [];
  let last = agentMessagesBody(model, stream);
  for (let bytes = AGENT_BODY_BYTES + 512; turns.length < count; bytes += 512) {
    const body = agentMessagesBody(model, stream, bytes);
    if (body === last) continue;
    turns.push(body);
    last = body;
  }
  return turns;
}

/** A messages body in the order Claude Code writes it: `model`, `messages`, then `system`, `tools` and the rest. */
export function inClaudeCodeOrder(json: string): string {
  const { model, messages, ...rest } = JSON.parse(json) as Record<string, unknown>;
  return JSON.stringify({ model, messages, ...rest });
}
