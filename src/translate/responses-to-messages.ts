/**
 * A Responses request sent on to a messages upstream (responses.md "Translation to
 * chat-completions and messages upstreams"). The input items are already resolved
 * (src/responses/resolve.ts): no `previous_response_id` chain or `item_reference` is left to follow.
 *
 * Decisions beyond the spec:
 * - `system` is `instructions` and the `system` / `developer` messages before the first other item,
 *   joined with "\n\n". A later system or developer message becomes a user text turn wrapped in
 *   `<system-instructions>` tags: the messages format has no system turn mid-conversation, and the
 *   tags keep the model from reading the instruction as something the user said.
 * - Turns follow translation.md: same-role turns merged so they alternate from a first `user` turn
 *   (a "." turn is put first when there is none), tool results first in their user turn, the end of
 *   a final assistant turn trimmed. Within an assistant turn, replayed thinking blocks go first.
 * - Reasoning items sealed by llmux come back as their thinking (or redacted thinking) block with
 *   its signature when a messages-format upstream issued them (the family Anthropic's signatures
 *   hold across: llmux.md section 11). State another family issued is stripped, counted by the
 *   request's carry reader.
 * - Custom tool calls are replayed as `tool_use` with input `{"input": …}`; local shell calls as
 *   `local_shell` with the action's fields as input. Unparsable function arguments become `{}`
 *   with a warning. An output whose call is not in the input becomes user text, with a warning.
 * - `reasoning.effort` -> `thinking.budget_tokens` by the rule chat's `reasoning_effort` follows
 *   (./thinking-budget.ts): minimal/low 1024, medium 4096, high 16384, xhigh/max 32768, at most
 *   three quarters of `max_tokens`, so the answer keeps its share. No thinking
 *   with a forced tool choice, nor when the request continues a tool loop whose assistant turn does
 *   not start with a replayed thinking block (the messages API refuses both); thinking drops
 *   `temperature` and keeps `top_p` only from 0.95.
 * - `text.format` json_object / json_schema: an instruction appended to the system text (best
 *   effort, as translation.md's `response_format` rule).
 * - Prompt caching: with the model's `prompt_cache` on (the default), breakpoints on the tools, the
 *   system prompt and the last user turn (./cache-breakpoints.ts).
 */
import type {
  MessagesContentBlock,
  MessagesImageBlock,
  MessagesMessage,
  MessagesRequest,
  MessagesTool,
  MessagesToolChoice,
  MessagesToolResultBlock,
} from '../formats/wire.ts';
import type { ResponsesRequest } from '../formats/responses.ts';
import {
  PARAGRAPH,
  type ResponsesRequestContext,
  callIdOf,
  contentText,
  endUserId,
  formatInstruction,
  inputItems,
  itemType,
  localShellArguments,
  maxTokens,
  openReasoning,
  parseDataUrl,
  partText,
  reasoningEffort,
  text,
  warnUnknownFields,
} from './responses-input.ts';
import { ADDITIONAL_TOOLS, LOCAL_SHELL, prepareTools, upstreamCallName } from './responses-tools.ts';
import type { TranslatedRequest } from './responses-to-chat.ts';
import { asRecord, records } from '../common/json.ts';
import type { CarriedItem } from './carried.ts';
import { addTurn, closeTurns, frontFirst, type Turn as MessageTurn } from './message-turns.ts';
import { MIN_THINKING_BUDGET, effortBudget, planThinking } from './thinking-budget.ts';
import { addCacheBreakpoints } from './cache-breakpoints.ts';

type Turn = MessageTurn<MessagesContentBlock>;

const HTTP_URL = /^https?:\/\//i;

/** Translates a validated, resolved Responses request into the messages request for `context.model`. Never throws. */
export function responsesRequestToMessages(request: ResponsesRequest, context: ResponsesRequestContext): TranslatedRequest<MessagesRequest> {
  const { model, warn } = context;
  warnUnknownFields(request, 'a messages upstream', warn);
  const systemParts: string[] = [];
  if (typeof request.instructions === 'string') systemParts.push(request.instructions);

  const items = inputItems(request);
  const calledIds = new Set(items.filter((item) => item['type'] === 'function_call' || item['type'] === 'custom_tool_call' || item['type'] === 'local_shell_call').map(callIdOf));
  const turns: Turn[] = [];
  let leading = true;

  items.forEach((item, index) => {
    const path = `input.${index}`;
    const type = itemType(item);
    const role = item['role'];
    if (type === 'message' && (role === 'system' || role === 'developer')) {
      const systemText = contentText(item['content'], PARAGRAPH);
      if (leading) systemParts.push(systemText);
      else if (systemText !== '') addTurn(turns, 'user', [{ type: 'text', text: `<system-instructions>\n${systemText}\n</system-instructions>` }]);
      return;
    }
    // Its tools are offered with the request's (responses-tools.ts); it ends no run of system text.
    if (type === ADDITIONAL_TOOLS) return;
    leading = false;
    switch (type) {
      case 'message':
        if (role === 'assistant') {
          const assistantText = contentText(item['content'], '');
          addTurn(turns, 'assistant', assistantText === '' ? [] : [{ type: 'text', text: assistantText }]);
        } else {
          addTurn(turns, 'user', userBlocks(item['content'], path, warn));
        }
        break;
      case 'function_call':
        addTurn(turns, 'assistant', [toolUse(item, upstreamCallName(text(item['name']), item['namespace']), parseArguments(item['arguments'], `${path}.arguments`, warn))]);
        break;
      case 'custom_tool_call':
        addTurn(turns, 'assistant', [toolUse(item, upstreamCallName(text(item['name']), item['namespace']), { input: text(item['input']) })]);
        break;
      case 'local_shell_call':
        addTurn(turns, 'assistant', [toolUse(item, LOCAL_SHELL, parseArguments(localShellArguments(item['action']), `${path}.action`, warn))]);
        break;
      case 'function_call_output':
      case 'custom_tool_call_output':
      case 'local_shell_call_output': {
        const callId = callIdOf(item);
        if (calledIds.has(callId)) {
          addTurn(turns, 'user', [toolResult(callId, item['output'])]);
        } else {
          warn(`${path}: answers call "${callId}", which is not in the input; sent as user text`);
          const blocks = toolResultBlocks(item['output']);
          addTurn(turns, 'user', [{ type: 'text', text: `Output of tool call ${callId}:` }, ...(typeof blocks === 'string' ? [{ type: 'text' as const, text: blocks }] : blocks)]);
        }
        break;
      }
      case 'reasoning': {
        const carried = openReasoning(item, context);
        const block = carried === undefined ? undefined : signedBlock(carried.item);
        if (carried !== undefined && context.carry.accept(carried.issuer) && block !== undefined) addTurn(turns, 'assistant', [block]);
        break;
      }
      default:
        warn(`${path}: ${type} items cannot be sent to a messages upstream; dropped`);
    }
  });
  finishTurns(turns);

  const body: MessagesRequest = { model: model.upstreamId, messages: turns.map(toMessage), max_tokens: 0 };
  const instruction = formatInstruction(asRecord(request.text)?.['format']);
  if (instruction !== '') systemParts.push(instruction);
  const system = systemParts.filter((part) => part !== '').join(PARAGRAPH);
  if (system !== '') body.system = system;

  const prepared = prepareTools(request, warn);
  let toolChoice: MessagesToolChoice | undefined;
  if (prepared.tools.length > 0) {
    body.tools = prepared.tools.map((tool): MessagesTool => {
      const result: MessagesTool = { name: tool.name, input_schema: tool.parameters as MessagesTool['input_schema'] };
      if (tool.description !== undefined) result.description = tool.description;
      return result;
    });
    const choice = prepared.choice;
    if (choice !== undefined) {
      toolChoice = choice.mode === 'tool' ? { type: 'tool', name: choice.name } : choice.mode === 'required' ? { type: 'any' } : { type: choice.mode };
    }
    if (request.parallel_tool_calls === false) {
      toolChoice ??= { type: 'auto' };
      if (toolChoice.type !== 'none') toolChoice.disable_parallel_tool_use = true;
    }
    if (toolChoice !== undefined) body.tool_choice = toolChoice;
  }

  const cap = maxTokens(request, model);
  let outputCap = cap.value;
  let thinkingBudget: number | undefined;
  const wanted = effortBudget(reasoningEffort(request));
  if (model.reasoning && wanted !== undefined) {
    if (toolChoice?.type === 'any' || toolChoice?.type === 'tool') {
      warn('reasoning.effort: dropped, the messages upstream cannot think with a forced tool_choice');
    } else if (continuesUnsignedToolLoop(turns)) {
      warn('reasoning.effort: dropped, the messages upstream wants the signed thinking of the assistant turn this request continues, and the input has none (send include: ["reasoning.encrypted_content"] and replay the reasoning items)');
    } else {
      const plan = planThinking(wanted, cap, model.maxOutputTokens);
      outputCap = plan.maxTokens;
      thinkingBudget = plan.budget;
      if (thinkingBudget === undefined) warn(`reasoning.effort: dropped, max_output_tokens ${outputCap} leaves no room for the minimum thinking budget of ${MIN_THINKING_BUDGET} beside the answer`);
    }
  }
  body.max_tokens = outputCap;
  if (thinkingBudget !== undefined) {
    body.thinking = { type: 'enabled', budget_tokens: thinkingBudget };
    if (typeof request.top_p === 'number' && request.top_p >= 0.95) body.top_p = request.top_p;
  } else {
    if (typeof request.temperature === 'number') body.temperature = Math.min(1, Math.max(0, request.temperature));
    if (typeof request.top_p === 'number') body.top_p = request.top_p;
  }

  const user = endUserId(request);
  if (model.promptCache === true) addCacheBreakpoints(body);
  if (user !== undefined) body.metadata = { user_id: user };
  if (request.stream === true) body.stream = true;
  return { body, toolNames: prepared.toolNames };
}

/** The signed thinking block a carried item replays as; undefined for state that is not the messages format's. */
function signedBlock(item: CarriedItem): MessagesContentBlock | undefined {
  if (item.kind === 'thinking') return { type: 'thinking', thinking: item.thinking, signature: item.signature };
  if (item.kind === 'redacted-thinking') return { type: 'redacted_thinking', data: item.data };
  return undefined;
}

function toolUse(item: Record<string, unknown>, name: string, input: Record<string, unknown>): MessagesContentBlock {
  return { type: 'tool_use', id: callIdOf(item), name, input };
}

/** Tool-call arguments -> an input object; anything else becomes `{}` with a warning, never an error. */
function parseArguments(args: unknown, path: string, warn: (message: string) => void): Record<string, unknown> {
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    const record = asRecord(JSON.parse(args));
    if (record !== undefined) return record;
    warn(`${path}: JSON but not an object; sent upstream as {}`);
  } catch {
    warn(`${path}: not valid JSON; sent upstream as {}`);
  }
  return {};
}

function userBlocks(content: unknown, path: string, warn: (message: string) => void): MessagesContentBlock[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  const blocks: MessagesContentBlock[] = [];
  records(content).forEach((part, index) => {
    const partValue = partText(part);
    if (partValue !== undefined) {
      if (partValue !== '') blocks.push({ type: 'text', text: partValue });
    } else if (part['type'] === 'input_image' && typeof part['image_url'] === 'string') {
      blocks.push(imageBlock(part['image_url']));
    } else {
      warn(`${path}.content.${index}: ${text(part['type']) || 'this'} part cannot be sent to a messages upstream; dropped`);
    }
  });
  return blocks;
}

function imageBlock(url: string): MessagesContentBlock {
  const data = parseDataUrl(url);
  if (data !== undefined) return { type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.base64 } } satisfies MessagesImageBlock;
  if (HTTP_URL.test(url)) return { type: 'image', source: { type: 'url', url } } satisfies MessagesImageBlock;
  return { type: 'text', text: '[image omitted: only http(s) and data URLs can be sent to this model]' };
}

/** A tool's output as tool_result content: a string, or text and image blocks. */
function toolResultBlocks(output: unknown): string | Array<MessagesContentBlock & { type: 'text' | 'image' }> {
  if (typeof output === 'string') return output;
  const blocks: Array<MessagesContentBlock & { type: 'text' | 'image' }> = [];
  for (const part of records(output)) {
    const partValue = partText(part);
    if (partValue !== undefined) {
      if (partValue !== '') blocks.push({ type: 'text', text: partValue });
    } else if (part['type'] === 'input_image' && typeof part['image_url'] === 'string') {
      const image = imageBlock(part['image_url']);
      if (image.type === 'image' || image.type === 'text') blocks.push(image);
    } else {
      blocks.push({ type: 'text', text: `[${text(part['type']) || 'part'} omitted]` });
    }
  }
  return blocks;
}

function toolResult(callId: string, output: unknown): MessagesToolResultBlock {
  return { type: 'tool_result', tool_use_id: callId, content: toolResultBlocks(output) };
}

function finishTurns(turns: Turn[]): void {
  for (const turn of turns) {
    if (turn.role === 'user') frontFirst(turn, (block) => block.type === 'tool_result');
    else frontFirst(turn, (block) => block.type === 'thinking' || block.type === 'redacted_thinking');
  }
  closeTurns(turns);
}

/** Whether the request answers tool calls of an assistant turn that does not start with thinking. */
function continuesUnsignedToolLoop(turns: Turn[]): boolean {
  const last = turns[turns.length - 1];
  if (last?.role !== 'user' || !last.blocks.some((block) => block.type === 'tool_result')) return false;
  const first = turns[turns.length - 2]?.blocks[0];
  return first?.type !== 'thinking' && first?.type !== 'redacted_thinking';
}

function toMessage(turn: Turn): MessagesMessage {
  const only = turn.blocks.length === 1 ? turn.blocks[0] : undefined;
  if (only?.type === 'text') return { role: turn.role, content: only.text };
  return { role: turn.role, content: turn.blocks };
}
