/**
 * A Responses request sent on to a Gemini upstream (`format: "gemini"`, llmux.md section 9). The
 * input items are already resolved (src/responses/resolve.ts). What every translation into Gemini
 * shares (turns, tool results, the placeholder signature, thinking budgets) is in
 * ./gemini-build.ts, and the tools are prepared as for the other upstreams (./responses-tools.ts:
 * custom tools as one-string functions, namespaces flattened, hosted tools dropped).
 *
 * Decisions beyond the spec:
 * - `instructions` and the system / developer messages before the first other item are the system
 *   instruction; a later one becomes user text wrapped in `<system-instructions>` tags, as for a
 *   messages upstream.
 * - Function, custom and local-shell calls are `functionCall` parts with their call ids (custom
 *   calls with input `{"input": …}`, shell calls with the action's fields); their outputs are
 *   `functionResponse` parts named after the call, text parts joined, images following as
 *   `inlineData`. An output whose call is not in the input is user text naming it, with a warning.
 * - Reasoning items: an llmux seal of a Gemini upstream's state (a thought signature, llmux.md
 *   section 11) gives it back to its call, else to the next call of the model turn
 *   (./carry-gemini.ts); a seal of another family's state is stripped, counted by the carry
 *   reader; OpenAI's own `encrypted_content` means nothing to Gemini and is dropped.
 * - `reasoning.effort` -> `thinkingConfig` (models marked `reasoning` only) by ./gemini-build.ts;
 *   thoughts are asked back when thinking is on, or when `reasoning.summary` asks for them.
 * - `text.format` json_schema -> `responseMimeType: application/json` + `responseJsonSchema`;
 *   json_object -> the MIME type alone.
 * - `parallel_tool_calls: false` has no Gemini equivalent: dropped with a warning. The end-user
 *   id (`user`, `safety_identifier`) has no Gemini field: dropped.
 */
import type { ResponsesRequest } from '../formats/responses.ts';
import type { GeminiGenerationConfig, GeminiPart, GeminiRequest } from '../formats/gemini-types.ts';
import { asRecord, records } from '../common/json.ts';
import {
  PARAGRAPH,
  type ResponsesRequestContext,
  callIdOf,
  contentText,
  inputItems,
  itemType,
  localShellArguments,
  openReasoning,
  partText,
  reasoningEffort,
  text,
  warnUnknownFields,
} from './responses-input.ts';
import { ADDITIONAL_TOOLS, LOCAL_SHELL, prepareTools, upstreamCallName } from './responses-tools.ts';
import type { TranslatedRequest } from './responses-to-chat.ts';
import {
  createContentsBuilder,
  effortBudget,
  functionCallPart,
  functionResponsePart,
  geminiToolConfig,
  mediaPartFromUrl,
  thinkingConfig,
  withGenerationConfig,
} from './gemini-build.ts';
import { parseArguments } from './chat-to-gemini.ts';
import type { CarriedItem } from './carried.ts';
import { countPlaceholders, signCalls } from './carry-gemini.ts';

/** Translates a validated, resolved Responses request into the Gemini request for `context.model`. Never throws. */
export function responsesRequestToGemini(request: ResponsesRequest, context: ResponsesRequestContext): TranslatedRequest<GeminiRequest> {
  const { model, warn } = context;
  warnUnknownFields(request, 'a Gemini upstream', warn);
  const systemParts: string[] = [];
  if (typeof request.instructions === 'string') systemParts.push(request.instructions);

  const builder = createContentsBuilder();
  const callNames = new Map<string, string>();
  let leading = true;
  // The model turn being read: its parts and the state sealed in its reasoning items.
  let turnParts: GeminiPart[] = [];
  let turnState: CarriedItem[] = [];
  const addModel = (parts: GeminiPart[]): void => {
    turnParts.push(...parts);
    builder.add('model', parts);
  };
  const addUser = (parts: GeminiPart[]): void => {
    signCalls(turnParts, turnState);
    turnParts = [];
    turnState = [];
    builder.add('user', parts);
  };
  inputItems(request).forEach((item, index) => {
    const path = `input.${index}`;
    const type = itemType(item);
    const role = item['role'];
    if (type === 'message' && (role === 'system' || role === 'developer')) {
      const systemText = contentText(item['content'], PARAGRAPH);
      if (leading) systemParts.push(systemText);
      else if (systemText !== '') addUser([{ text: `<system-instructions>\n${systemText}\n</system-instructions>` }]);
      return;
    }
    // Its tools are offered with the request's (responses-tools.ts); it ends no run of system text.
    if (type === ADDITIONAL_TOOLS) return;
    leading = false;
    switch (type) {
      case 'message':
        if (role === 'assistant') {
          const assistantText = contentText(item['content'], '');
          addModel(assistantText === '' ? [] : [{ text: assistantText }]);
        } else {
          addUser(userParts(item['content'], path, warn));
        }
        break;
      case 'function_call':
      case 'custom_tool_call':
      case 'local_shell_call': {
        const callId = callIdOf(item);
        const name = type === 'local_shell_call' ? LOCAL_SHELL : upstreamCallName(text(item['name']), item['namespace']);
        const args = type === 'function_call'
          ? parseArguments(item['arguments'], `${path}.arguments`, warn)
          : type === 'custom_tool_call' ? { input: text(item['input']) } : parseArguments(localShellArguments(item['action']), `${path}.action`, warn);
        callNames.set(callId, name);
        addModel([functionCallPart(callId, name, args)]);
        break;
      }
      case 'function_call_output':
      case 'custom_tool_call_output':
      case 'local_shell_call_output': {
        const callId = callIdOf(item);
        const { output, media } = toolOutput(item['output']);
        const name = callNames.get(callId);
        if (name === undefined) {
          warn(`${path}: answers call "${callId}", which is not in the input; sent as user text`);
          addUser([{ text: `Output of tool call ${callId}:\n${output}` }, ...media]);
        } else {
          addUser([functionResponsePart(callId, name, output, false), ...media]);
        }
        break;
      }
      case 'reasoning': {
        const carried = openReasoning(item, context);
        if (carried !== undefined && context.carry.accept(carried.issuer)) turnState.push(carried.item);
        break;
      }
      default:
        warn(`${path}: ${type} items cannot be sent to a Gemini upstream; dropped`);
    }
  });

  signCalls(turnParts, turnState);
  const contents = builder.finish(countPlaceholders(context.carry));
  const body: GeminiRequest = { contents };
  const system = systemParts.filter((part) => part !== '').join(PARAGRAPH);
  if (system !== '') body.systemInstruction = { parts: [{ text: system }] };

  const prepared = prepareTools(request, warn);
  if (prepared.tools.length > 0) {
    body.tools = [{
      functionDeclarations: prepared.tools.map((tool) => {
        const declaration: { name: string; description?: string; parametersJsonSchema: Record<string, unknown> } = { name: tool.name, parametersJsonSchema: tool.parameters };
        if (tool.description !== undefined) declaration.description = tool.description;
        return declaration;
      }),
    }];
    if (prepared.choice !== undefined) body.toolConfig = geminiToolConfig(prepared.choice);
    if (request.parallel_tool_calls === false) warn('parallel_tool_calls: dropped, a Gemini upstream cannot be told to call one function at a time');
  }

  const config: GeminiGenerationConfig = {};
  const requested = typeof request.max_output_tokens === 'number' && request.max_output_tokens > 0 ? request.max_output_tokens : undefined;
  if (requested !== undefined) config.maxOutputTokens = requested;
  if (typeof request.temperature === 'number') config.temperature = request.temperature;
  if (typeof request.top_p === 'number') config.topP = request.top_p;
  const format = asRecord(asRecord(request.text)?.['format']);
  if (format?.['type'] === 'json_object' || format?.['type'] === 'json_schema') {
    config.responseMimeType = 'application/json';
    const schema = asRecord(format['schema']);
    if (schema !== undefined) config.responseJsonSchema = schema;
  }
  const budget = model.reasoning ? effortBudget(reasoningEffort(request)) : undefined;
  if (budget !== undefined) {
    const thinking = thinkingConfig(budget, requested, 'reasoning.effort', warn);
    if (thinking !== undefined) config.thinkingConfig = thinking;
  } else if (model.reasoning && typeof asRecord(request.reasoning)?.['summary'] === 'string') {
    // A summary without an effort: the model thinks as it would, and says what it thought.
    config.thinkingConfig = { includeThoughts: true };
  }
  return { body: withGenerationConfig(body, config), toolNames: prepared.toolNames };
}

function userParts(content: unknown, path: string, warn: (message: string) => void): GeminiPart[] {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  const parts: GeminiPart[] = [];
  records(content).forEach((part, index) => {
    const partValue = partText(part);
    if (partValue !== undefined) {
      if (partValue !== '') parts.push({ text: partValue });
    } else if (part['type'] === 'input_image' && typeof part['image_url'] === 'string') {
      parts.push(mediaPartFromUrl(part['image_url']));
    } else {
      warn(`${path}.content.${index}: ${text(part['type']) || 'this'} part cannot be sent to a Gemini upstream; dropped`);
    }
  });
  return parts;
}

/** A tool's output: its text parts joined, its images as parts to follow the response. */
function toolOutput(output: unknown): { output: string; media: GeminiPart[] } {
  if (typeof output === 'string') return { output, media: [] };
  const texts: string[] = [];
  const media: GeminiPart[] = [];
  for (const part of records(output)) {
    const partValue = partText(part);
    if (partValue !== undefined) {
      if (partValue !== '') texts.push(partValue);
    } else if (part['type'] === 'input_image' && typeof part['image_url'] === 'string') {
      media.push(mediaPartFromUrl(part['image_url']));
    } else {
      texts.push(`[${text(part['type']) || 'part'} omitted]`);
    }
  }
  return { output: texts.join(PARAGRAPH), media };
}
