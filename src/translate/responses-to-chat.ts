/**
 * A Responses request sent on to a chat-completions upstream (responses.md "Translation to
 * chat-completions and messages upstreams"). The input items are already resolved
 * (src/responses/resolve.ts): no `previous_response_id` chain or `item_reference` is left to follow.
 *
 * Decisions beyond the spec:
 * - `instructions` become the first system message; every `system` / `developer` message stays a
 *   system message where it stands (chat's `developer` role is not known to every upstream).
 * - An assistant turn gathers the assistant messages, tool calls and replayable reasoning that
 *   follow each other until a user, system or tool-output item: its texts are joined with "\n\n",
 *   its calls become `tool_calls` in order.
 * - Custom tool calls are replayed as calls of their function with `{"input": …}` arguments; local
 *   shell calls as calls of `local_shell` with the action's fields as arguments.
 * - Tool outputs are text (chat `tool` messages carry text only): text parts joined, images
 *   replaced by a placeholder. An output whose call is not in the input (a chat upstream refuses a
 *   tool message nothing called) is sent as user text naming the call, with a warning.
 * - `user` is the first of `user`, `safety_identifier`, `metadata.user_id`, hashed when longer than
 *   64 characters. `reasoning.effort` `max` becomes `xhigh`, the highest chat knows.
 * - Reasoning items: their text (the summary the client was shown, else what llmux sealed) is
 *   replayed as `reasoning_content` to a `replay_reasoning` model; the state a llmux seal carries
 *   goes back when the upstream is of its issuer's family (./carry-chat.ts: a Gemini thought
 *   signature onto its call, `reasoning_details` onto the message), else it is stripped.
 * - `prompt_cache_key` goes to an OpenAI upstream only (its own, else the conversation's: the pair
 *   in ./index.ts adds it); other chat upstreams may refuse it.
 * - Dropped: `store`, `include`, `truncation`, `service_tier` (llmux's own or no equivalent),
 *   `text.verbosity`, `reasoning.summary`, unknown fields (with a warning).
 */
import type { ChatContentPart, ChatMessage, ChatRequest, ChatTool, ChatToolCall, ChatToolChoice } from '../formats/wire.ts';
import type { ResponsesRequest } from '../formats/responses.ts';
import {
  PARAGRAPH,
  type ResponsesRequestContext,
  callIdOf,
  contentText,
  endUserId,
  inputItems,
  itemType,
  localShellArguments,
  maxTokens,
  openReasoning,
  partText,
  reasoningEffort,
  summaryText,
  text,
  toolOutputText,
  warnUnknownFields,
} from './responses-input.ts';
import { ADDITIONAL_TOOLS, LOCAL_SHELL, type ToolNames, type UpstreamToolChoice, prepareTools, upstreamCallName } from './responses-tools.ts';
import { asRecord, records } from '../common/json.ts';
import type { CarriedItem } from './carried.ts';
import { carryIntoChatMessage, fillChatGaps } from './carry-chat.ts';
import type { UpstreamModel } from './messages-to-chat.ts';

/** A translated request: the upstream body, and the tool names the answer translators need. */
export interface TranslatedRequest<Body> {
  body: Body;
  toolNames: ToolNames;
}

const CHAT_IMAGE_DETAILS = new Set(['auto', 'low', 'high']);

interface AssistantTurn { texts: string[]; calls: ChatToolCall[]; reasoning: string[]; carried: CarriedItem[] }

function newTurn(): AssistantTurn {
  return { texts: [], calls: [], reasoning: [], carried: [] };
}

/** Translates a validated, resolved Responses request into the chat-completions request for `context.model`. Never throws. */
export function responsesRequestToChat(request: ResponsesRequest, context: ResponsesRequestContext): TranslatedRequest<ChatRequest> {
  const { model, warn } = context;
  warnUnknownFields(request, 'a chat-completions upstream', warn);
  const messages: ChatMessage[] = [];
  if (typeof request.instructions === 'string' && request.instructions !== '') messages.push({ role: 'system', content: request.instructions });

  const items = inputItems(request);
  const calledIds = new Set(items.filter((item) => item['type'] === 'function_call' || item['type'] === 'custom_tool_call' || item['type'] === 'local_shell_call').map(callIdOf));
  let turn: AssistantTurn | undefined;
  const flush = (): void => {
    if (turn !== undefined && (turn.texts.length > 0 || turn.calls.length > 0)) messages.push(assistantMessage(turn, model));
    turn = undefined;
  };

  items.forEach((item, index) => {
    const path = `input.${index}`;
    const type = itemType(item);
    switch (type) {
      case 'message': {
        const role = item['role'];
        if (role === 'assistant') {
          turn ??= newTurn();
          const assistantText = contentText(item['content'], '');
          if (assistantText !== '') turn.texts.push(assistantText);
          break;
        }
        flush();
        if (role === 'system' || role === 'developer') {
          const systemText = contentText(item['content'], PARAGRAPH);
          if (systemText !== '') messages.push({ role: 'system', content: systemText });
        } else {
          messages.push({ role: 'user', content: userContent(item['content'], path, warn) });
        }
        break;
      }
      case 'function_call':
      case 'custom_tool_call':
      case 'local_shell_call':
        turn ??= newTurn();
        turn.calls.push(replayedCall(item, type));
        break;
      case 'function_call_output':
      case 'custom_tool_call_output':
      case 'local_shell_call_output': {
        flush();
        const callId = callIdOf(item);
        const output = toolOutputText(item['output']);
        if (calledIds.has(callId)) {
          messages.push({ role: 'tool', tool_call_id: callId, content: output });
        } else {
          warn(`${path}: answers call "${callId}", which is not in the input; sent as user text`);
          messages.push({ role: 'user', content: `Output of tool call ${callId}:\n${output}` });
        }
        break;
      }
      case 'reasoning': {
        const carried = openReasoning(item, context);
        turn ??= newTurn();
        // Only reasoning llmux sealed (this key's) is replayed: another upstream's (OpenAI's own) means nothing here.
        const reasoning = carried === undefined ? '' : summaryText(item) || sealedText(carried.item);
        if (reasoning !== '' && model.replayReasoning) turn.reasoning.push(reasoning);
        if (carried !== undefined && carried.item.kind !== 'reasoning' && context.carry.accept(carried.issuer)) turn.carried.push(carried.item);
        break;
      }
      case ADDITIONAL_TOOLS:
        // Its tools are offered with the request's (responses-tools.ts).
        break;
      default:
        warn(`${path}: ${type} items cannot be sent to a chat-completions upstream; dropped`);
    }
  });
  flush();
  fillChatGaps(messages, model, context.carry);

  const body: ChatRequest = { model: model.upstreamId, messages };
  const { value: outputCap, requested } = maxTokens(request, model);
  if (requested) body[model.maxTokensParam] = outputCap;

  const prepared = prepareTools(request, warn);
  if (prepared.tools.length > 0) {
    body.tools = prepared.tools.map((tool): ChatTool => {
      const fn: ChatTool['function'] = { name: tool.name, parameters: tool.parameters };
      if (tool.description !== undefined) fn.description = tool.description;
      if (tool.strict !== undefined) fn.strict = tool.strict;
      return { type: 'function', function: fn };
    });
    const choice = chatToolChoice(prepared.choice);
    if (choice !== undefined) body.tool_choice = choice;
    if (request.parallel_tool_calls === false) body.parallel_tool_calls = false;
  }

  if (typeof request.temperature === 'number') body.temperature = request.temperature;
  if (typeof request.top_p === 'number') body.top_p = request.top_p;
  const effort = reasoningEffort(request);
  if (model.reasoning && effort !== undefined) body.reasoning_effort = effort === 'max' ? 'xhigh' : effort;
  const responseFormat = chatResponseFormat(request);
  if (responseFormat !== undefined) body.response_format = responseFormat;
  const user = endUserId(request);
  if (user !== undefined) body.user = user;
  if (request.stream === true) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return { body, toolNames: prepared.toolNames };
}

function assistantMessage(turn: AssistantTurn, model: UpstreamModel): ChatMessage {
  const joined = turn.texts.join(PARAGRAPH);
  // Chat wants content null beside tool_calls when there is no text.
  const message: ChatMessage = { role: 'assistant', content: joined === '' && turn.calls.length > 0 ? null : joined };
  if (turn.calls.length > 0) message.tool_calls = turn.calls;
  if (turn.reasoning.length > 0) message.reasoning_content = turn.reasoning.join(PARAGRAPH);
  carryIntoChatMessage(message, turn.carried, model);
  return message;
}

/** The reasoning text a seal holds: signed thinking's, or the provider's plain reasoning. */
function sealedText(item: CarriedItem | undefined): string {
  if (item?.kind === 'thinking') return item.thinking;
  if (item?.kind === 'reasoning') return item.text ?? '';
  return '';
}

function replayedCall(item: Record<string, unknown>, type: string): ChatToolCall {
  const id = callIdOf(item);
  if (type === 'local_shell_call') return { id, type: 'function', function: { name: LOCAL_SHELL, arguments: localShellArguments(item['action']) } };
  const name = upstreamCallName(text(item['name']), item['namespace']);
  const args = type === 'custom_tool_call' ? JSON.stringify({ input: text(item['input']) }) : text(item['arguments']);
  return { id, type: 'function', function: { name, arguments: args } };
}

/** A user message's content: a string when it is text only (what every chat upstream accepts), else parts. */
function userContent(content: unknown, path: string, warn: (message: string) => void): string | ChatContentPart[] {
  if (typeof content === 'string') return content;
  const parts: ChatContentPart[] = [];
  let textOnly = true;
  records(content).forEach((part, index) => {
    const partValue = partText(part);
    if (partValue !== undefined) {
      if (partValue !== '') parts.push({ type: 'text', text: partValue });
      return;
    }
    if (part['type'] === 'input_image' && typeof part['image_url'] === 'string') {
      const image: { url: string; detail?: string } = { url: part['image_url'] };
      if (typeof part['detail'] === 'string' && CHAT_IMAGE_DETAILS.has(part['detail'])) image.detail = part['detail'];
      parts.push({ type: 'image_url', image_url: image });
      textOnly = false;
      return;
    }
    warn(`${path}.content.${index}: ${text(part['type']) || 'this'} part cannot be sent to a chat-completions upstream; dropped`);
  });
  if (!textOnly) return parts;
  return parts.map((part) => text((part as Record<string, unknown>)['text'])).join(PARAGRAPH);
}

function chatToolChoice(choice: UpstreamToolChoice | undefined): ChatToolChoice | undefined {
  if (choice === undefined) return undefined;
  return choice.mode === 'tool' ? { type: 'function', function: { name: choice.name } } : choice.mode;
}

function chatResponseFormat(request: ResponsesRequest): ChatRequest['response_format'] {
  const format = asRecord(asRecord(request.text)?.['format']);
  if (format?.['type'] === 'json_object') return { type: 'json_object' };
  if (format?.['type'] !== 'json_schema') return undefined;
  const spec: { name: string; schema?: Record<string, unknown>; strict?: boolean; description?: string } = { name: text(format['name']) };
  const schema = asRecord(format['schema']);
  if (schema !== undefined) spec.schema = schema;
  if (typeof format['strict'] === 'boolean') spec.strict = format['strict'];
  if (typeof format['description'] === 'string') spec.description = format['description'];
  return { type: 'json_schema', json_schema: spec };
}
