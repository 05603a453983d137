/**
 * Responses tools as a chat-completions or messages upstream can take them (responses.md
 * "Translation"), and the map that turns the upstream's tool calls back into Responses items.
 *
 * Both upstream formats know only functions with a JSON-schema input, so:
 * - `function` tools pass as they are;
 * - `custom` tools (Codex's freeform `apply_patch`) become a function with one string parameter
 *   `input`; the grammar goes into the description, since no upstream can enforce it;
 * - `namespace` tools (Codex's MCP servers) are flattened to `NAMESPACE__TOOL`; a flat name longer
 *   than 64 characters, or with characters the providers refuse, is cut and given a short stable
 *   hash (`…_1a2b3c4d`) so it stays unique and the same on every request;
 * - `local_shell` becomes a function `local_shell` whose parameters are the exec action;
 * - hosted tools (`web_search`, `file_search`, `code_interpreter`, `image_generation`,
 *   `computer_use`, `tool_search`, `mcp`, …) and unknown types are dropped with a warning: the
 *   upstream cannot run them, and a 400 would stop a client (Codex) that sends them by default.
 * - Codex's "responses lite" requests (its default model) carry their tools in an input item
 *   `{type: "additional_tools", tools: [...]}` instead of `tools`: those are offered like `tools`,
 *   after them, so the model gets tools.
 *
 * Decisions beyond the spec:
 * - A named `tool_choice` is looked up among the tools as sent upstream: a function of a namespace
 *   is found by `namespace` + `name`, or by its bare name when that names exactly one tool. A choice
 *   naming no offered tool is dropped with a warning (the upstream would refuse it).
 * - `allowed_tools` keeps its mode (`auto` / `required`); the allow-list itself is not enforced
 *   (all tools stay offered) and a warning says so.
 * - Two tools that come out with the same upstream name: the first wins, the other is dropped with
 *   a warning.
 */
import { createHash } from 'node:crypto';
import type { ResponsesRequest } from '../formats/responses.ts';
import { asRecord, isRecord, records } from '../common/json.ts';

/** The upstream name of the local shell function. */
export const LOCAL_SHELL = 'local_shell';
/** The input item type Codex puts tools in when it leaves `tools` out. */
export const ADDITIONAL_TOOLS = 'additional_tools';

const SEPARATOR = '__';
const MAX_NAME_CHARS = 64;
const HASH_CHARS = 8;
const VALID_NAME = /^[a-zA-Z0-9_-]+$/;
const INVALID_NAME_CHARS = /[^a-zA-Z0-9_-]/g;

/** What the answer translators need to turn an upstream tool call back into a Responses item. */
export interface ToolNames {
  /** Flattened upstream name -> the namespace and name the client declared. */
  flattened: ReadonlyMap<string, { namespace: string; name: string }>;
  /** Upstream names of custom (freeform) tools, flattened ones included. */
  custom: ReadonlySet<string>;
  /** Whether `local_shell` was offered. */
  localShell: boolean;
}

/** No tools: every call is read as a plain function call. */
export const NO_TOOL_NAMES: ToolNames = { flattened: new Map(), custom: new Set(), localShell: false };

/** A tool as both upstream formats describe one. */
export interface UpstreamTool {
  name: string;
  description?: string;
  /** A JSON schema of `type: object`. */
  parameters: Record<string, unknown>;
  strict?: boolean;
}

/** `tool_choice` in neither format: the chat and messages translators spell it each their way. */
export type UpstreamToolChoice = { mode: 'auto' | 'none' | 'required' } | { mode: 'tool'; name: string };

export interface PreparedTools {
  tools: UpstreamTool[];
  /** Undefined when the request set none, or when no tool is left to choose. */
  choice: UpstreamToolChoice | undefined;
  toolNames: ToolNames;
}

/** What a call of an upstream tool becomes in the answer. */
export interface RestoredTool {
  kind: 'function' | 'custom' | 'local_shell';
  name: string;
  namespace?: string;
}

const LOCAL_SHELL_TOOL: UpstreamTool = {
  name: LOCAL_SHELL,
  description:
    'Runs a command on the local machine and returns its output. `command` is the program and its arguments, ' +
    'one array item each (for example ["bash", "-lc", "ls -la"]).',
  parameters: {
    type: 'object',
    properties: {
      command: { type: 'array', items: { type: 'string' }, description: 'The program and its arguments.' },
      working_directory: { type: 'string', description: 'The directory to run the command in.' },
      timeout_ms: { type: 'integer', description: 'Stop the command after this many milliseconds.' },
      env: { type: 'object', additionalProperties: { type: 'string' }, description: 'Environment variables to set.' },
      user: { type: 'string', description: 'The user to run the command as.' },
    },
    required: ['command'],
    additionalProperties: false,
  },
};

const CUSTOM_TOOL_PARAMETERS: Record<string, unknown> = {
  type: 'object',
  properties: { input: { type: 'string', description: 'The whole input for the tool, as raw text.' } },
  required: ['input'],
  additionalProperties: false,
};

/** `NAMESPACE__TOOL`, or a cut name with a stable hash when that is too long or has refused characters. */
export function flatToolName(namespace: string, name: string): string {
  const flat = `${namespace}${SEPARATOR}${name}`;
  if (flat.length <= MAX_NAME_CHARS && VALID_NAME.test(flat)) return flat;
  const hash = createHash('sha256').update(namespace).update('\u0000').update(name).digest('hex').slice(0, HASH_CHARS);
  return `${flat.replace(INVALID_NAME_CHARS, '_').slice(0, MAX_NAME_CHARS - HASH_CHARS - 1)}_${hash}`;
}

/** The upstream name of a call the client replays: flattened when it names a namespace. */
export function upstreamCallName(name: string, namespace: unknown): string {
  return typeof namespace === 'string' && namespace !== '' ? flatToolName(namespace, name) : name;
}

/** The Responses name, namespace and item kind of a call the upstream made to `upstreamName`. */
export function restoreTool(upstreamName: string, toolNames: ToolNames): RestoredTool {
  const kind = toolNames.custom.has(upstreamName)
    ? 'custom'
    : toolNames.localShell && upstreamName === LOCAL_SHELL ? 'local_shell' : 'function';
  const original = toolNames.flattened.get(upstreamName);
  return original === undefined ? { kind, name: upstreamName } : { kind, name: original.name, namespace: original.namespace };
}

/** The description of a custom tool: the client's, and how to write the input, grammar included. */
export function customToolDescription(description: unknown, format: unknown): string {
  const grammar = asRecord(format);
  const how = grammar?.['type'] === 'grammar' && typeof grammar['definition'] === 'string'
    ? `Put the whole input in the string parameter "input", written in this ${String(grammar['syntax'])} grammar:\n${grammar['definition']}`
    : 'Put the whole input, as free-form text, in the string parameter "input".';
  return typeof description === 'string' && description !== '' ? `${description}\n\n${how}` : how;
}

/**
 * The request's tools and tool choice for a function-only upstream, with the names map the answer
 * translators need. Never throws: what cannot be offered is dropped with a warning.
 */
export function prepareTools(request: ResponsesRequest, warn: (message: string) => void): PreparedTools {
  const tools: UpstreamTool[] = [];
  const flattened = new Map<string, { namespace: string; name: string }>();
  const custom = new Set<string>();
  let localShell = false;
  // Bare name of a namespaced tool -> the flat names it has, for a tool_choice naming it bare.
  const byBareName = new Map<string, string[]>();
  const taken = new Set<string>();

  const add = (tool: UpstreamTool, path: string): boolean => {
    if (taken.has(tool.name)) {
      warn(`${path}: another tool is already offered as "${tool.name}"; dropped`);
      return false;
    }
    taken.add(tool.name);
    tools.push(tool);
    return true;
  };

  const declared: Array<{ tool: Record<string, unknown>; path: string }> = records(request.tools).map((tool, index) => ({ tool, path: `tools.${index}` }));
  if (Array.isArray(request.input)) {
    request.input.forEach((item, itemIndex) => {
      if (!isRecord(item) || item['type'] !== ADDITIONAL_TOOLS) return;
      records(item['tools']).forEach((tool, index) => declared.push({ tool, path: `input.${itemIndex}.tools.${index}` }));
    });
  }
  declared.forEach(({ tool, path }) => {
    switch (tool['type']) {
      case 'function':
      case 'custom': {
        const upstream = callableTool(tool, String(tool['name']));
        if (add(upstream, path) && tool['type'] === 'custom') custom.add(upstream.name);
        break;
      }
      case 'namespace': {
        const namespace = String(tool['name']);
        records(tool['tools']).forEach((inner, innerIndex) => {
          const name = String(inner['name']);
          const upstream = callableTool(inner, flatToolName(namespace, name), tool['description']);
          if (!add(upstream, `${path}.tools.${innerIndex}`)) return;
          flattened.set(upstream.name, { namespace, name });
          if (inner['type'] === 'custom') custom.add(upstream.name);
          byBareName.set(name, [...(byBareName.get(name) ?? []), upstream.name]);
        });
        break;
      }
      case 'local_shell':
        if (add(LOCAL_SHELL_TOOL, path)) localShell = true;
        break;
      default:
        warn(`${path}: "${String(tool['type'])}" is a hosted or unknown tool this model's upstream cannot run; dropped`);
    }
  });

  const choice = tools.length === 0 ? undefined : toolChoice(request.tool_choice, taken, byBareName, warn);
  return { tools, choice, toolNames: { flattened, custom, localShell } };
}

function callableTool(tool: Record<string, unknown>, name: string, namespaceDescription?: unknown): UpstreamTool {
  const upstream: UpstreamTool = { name, parameters: CUSTOM_TOOL_PARAMETERS };
  let description: string | undefined;
  if (tool['type'] === 'custom') {
    description = customToolDescription(tool['description'], tool['format']);
  } else {
    const schema = asRecord(tool['parameters']);
    upstream.parameters = { type: 'object', properties: {}, ...schema };
    if (typeof tool['description'] === 'string' && tool['description'] !== '') description = tool['description'];
    if (typeof tool['strict'] === 'boolean') upstream.strict = tool['strict'];
  }
  // A namespace's description tells the model what the group is for (an MCP server's purpose).
  if (typeof namespaceDescription === 'string' && namespaceDescription !== '') {
    description = description === undefined ? namespaceDescription : `${namespaceDescription}\n\n${description}`;
  }
  if (description !== undefined) upstream.description = description;
  return upstream;
}

function toolChoice(
  choice: ResponsesRequest['tool_choice'],
  offered: ReadonlySet<string>,
  byBareName: ReadonlyMap<string, string[]>,
  warn: (message: string) => void,
): UpstreamToolChoice | undefined {
  if (choice === undefined) return undefined;
  if (choice === 'auto' || choice === 'none' || choice === 'required') return { mode: choice };
  const record = asRecord(choice) ?? {};
  const type = record['type'];
  if (type === 'allowed_tools') {
    warn('tool_choice: allowed_tools is not enforced for this model\'s upstream; every tool stays offered');
    return { mode: record['mode'] === 'required' ? 'required' : 'auto' };
  }
  if (type === 'function' || type === 'custom') {
    const name = String(record['name']);
    const flat = typeof record['namespace'] === 'string' ? flatToolName(record['namespace'], name) : undefined;
    if (flat !== undefined && offered.has(flat)) return { mode: 'tool', name: flat };
    if (offered.has(name)) return { mode: 'tool', name };
    const candidates = byBareName.get(name) ?? [];
    if (candidates.length === 1 && candidates[0] !== undefined) return { mode: 'tool', name: candidates[0] };
    warn(`tool_choice: "${name}" names no tool offered to this model's upstream; dropped`);
    return undefined;
  }
  warn(`tool_choice: "${String(type)}" chooses a hosted tool this model's upstream cannot run; dropped`);
  return undefined;
}
