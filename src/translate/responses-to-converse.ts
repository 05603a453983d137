/**
 * A Responses request sent on to a Bedrock `converse` provider (llmux.md section 8). The input items
 * are already resolved (src/responses/resolve.ts). What every translation into Converse shares
 * (messages, tool history, images, tool choice, inference settings, each family's reasoning) is in
 * ./converse-build.ts, and the tools are prepared as for the other upstreams
 * (./responses-tools.ts: custom tools as one-string functions, namespaces flattened, hosted tools
 * dropped).
 *
 * Decisions beyond the spec:
 * - `instructions` and the system / developer messages before the first other item are the system
 *   prompt; a later one becomes user text wrapped in `<system-instructions>` tags, as for a
 *   messages upstream.
 * - Function, custom and local-shell calls are `toolUse` blocks with their call ids (custom calls
 *   with input `{"input": …}`, shell calls with the action's fields); their outputs `toolResult`
 *   blocks, text parts joined, images where the family takes them.
 * - Reasoning items sealed by llmux come back as `reasoningContent` to Claude, signed or redacted,
 *   when this provider's family issued them (llmux.md section 11: a seal of another family's state
 *   is stripped, counted by the carry reader); anything else (OpenAI's encrypted reasoning, a seal
 *   without a signature, any reasoning for another model family) is dropped.
 * - `reasoning.effort` -> the family's reasoning fields (models marked `reasoning` only), Claude's
 *   by the budget rule with the refusals of a messages upstream (./converse-build.ts).
 * - `text.format` json_object / json_schema: an instruction appended to the system prompt (best
 *   effort: Converse has no JSON mode).
 * - `parallel_tool_calls: false` cannot be said: dropped with a warning. The end-user id (`user`,
 *   `safety_identifier`) has no Converse field: dropped.
 */
import type { ResponsesRequest } from '../formats/responses.ts';
import type { ConverseContentBlock, ConverseRequest } from '../formats/converse.ts';
import { asRecord, records } from '../common/json.ts';
import {
  PARAGRAPH,
  type ResponsesRequestContext,
  callIdOf,
  contentText,
  formatInstruction,
  inputItems,
  itemType,
  localShellArguments,
  maxTokens,
  openReasoning,
  partText,
  reasoningEffort,
  text,
  warnUnknownFields,
} from './responses-input.ts';
import { ADDITIONAL_TOOLS, LOCAL_SHELL, prepareTools, upstreamCallName } from './responses-tools.ts';
import type { TranslatedRequest } from './responses-to-chat.ts';
import { parseArguments } from './chat-to-gemini.ts';
import { type ToolOutput, buildConverseRequest, createConverseTurns, mediaFromUrl, toolResultBlock, toolUseBlock } from './converse-build.ts';
import { converseFamily, effortSettings, sealedReasoning } from './converse-reasoning.ts';

/** Translates a validated, resolved Responses request into the Converse request for `context.model`. Never throws. */
export function responsesRequestToConverse(request: ResponsesRequest, context: ResponsesRequestContext): TranslatedRequest<ConverseRequest> {
  const { model, warn } = context;
  warnUnknownFields(request, 'a Converse upstream', warn);
  const family = converseFamily(model.upstreamId);
  const system: string[] = [];
  if (typeof request.instructions === 'string') system.push(request.instructions);

  const turns = createConverseTurns();
  let leading = true;
  inputItems(request).forEach((item, index) => {
    const path = `input.${index}`;
    const type = itemType(item);
    const role = item['role'];
    if (type === 'message' && (role === 'system' || role === 'developer')) {
      const systemText = contentText(item['content'], PARAGRAPH);
      if (leading) system.push(systemText);
      else if (systemText !== '') turns.add('user', [{ text: `<system-instructions>\n${systemText}\n</system-instructions>` }]);
      return;
    }
    // Its tools are offered with the request's (responses-tools.ts); it ends no run of system text.
    if (type === ADDITIONAL_TOOLS) return;
    leading = false;
    switch (type) {
      case 'message':
        if (role === 'assistant') turns.add('assistant', [{ text: contentText(item['content'], '') }]);
        else turns.add('user', userBlocks(item['content'], path, warn));
        break;
      case 'function_call':
      case 'custom_tool_call':
      case 'local_shell_call': {
        const name = type === 'local_shell_call' ? LOCAL_SHELL : upstreamCallName(text(item['name']), item['namespace']);
        const args = type === 'function_call'
          ? parseArguments(item['arguments'], `${path}.arguments`, warn)
          : type === 'custom_tool_call' ? { input: text(item['input']) } : parseArguments(localShellArguments(item['action']), `${path}.action`, warn);
        turns.add('assistant', [toolUseBlock(callIdOf(item), name, args)]);
        break;
      }
      case 'function_call_output':
      case 'custom_tool_call_output':
      case 'local_shell_call_output':
        turns.add('user', [toolResultBlock(family, callIdOf(item), toolOutput(item['output'], `${path}.output`, warn), false)]);
        break;
      case 'reasoning': {
        const carried = openReasoning(item, context);
        const reasoning = carried === undefined || !context.carry.accept(carried.issuer) ? undefined : sealedReasoning(family, carried.item);
        if (reasoning !== undefined) turns.add('assistant', [reasoning]);
        break;
      }
      default:
        warn(`${path}: ${type} items cannot be sent to a Converse upstream; dropped`);
    }
  });

  const instruction = formatInstruction(asRecord(request.text)?.['format']);
  if (instruction !== '') system.push(instruction);

  const prepared = prepareTools(request, warn);
  const cap = maxTokens(request, model);
  const { inference, fields } = effortSettings(model, turns, {
    effort: reasoningEffort(request),
    field: 'reasoning.effort',
    cap,
    forcedTool: prepared.choice?.mode === 'required' || prepared.choice?.mode === 'tool',
  }, {
    maxTokens: cap.requested ? cap.value : undefined,
    temperature: typeof request.temperature === 'number' ? request.temperature : undefined,
    topP: typeof request.top_p === 'number' ? request.top_p : undefined,
    stop: [],
  }, warn);

  const body = buildConverseRequest(turns, {
    model,
    system,
    tools: prepared.tools,
    choice: prepared.choice,
    oneCallAtATime: request.parallel_tool_calls === false ? 'parallel_tool_calls' : undefined,
    inference,
    fields,
    warn,
  });
  return { body, toolNames: prepared.toolNames };
}

function userBlocks(content: unknown, path: string, warn: (message: string) => void): ConverseContentBlock[] {
  if (typeof content === 'string') return [{ text: content }];
  const blocks: ConverseContentBlock[] = [];
  records(content).forEach((part, index) => {
    const partValue = partText(part);
    if (partValue !== undefined) blocks.push({ text: partValue });
    else if (part['type'] === 'input_image' && typeof part['image_url'] === 'string') blocks.push(mediaFromUrl(part['image_url'], `${path}.content.${index}`, warn));
    else if (part['type'] === 'input_file' && typeof part['file_data'] === 'string') blocks.push(mediaFromUrl(part['file_data'], `${path}.content.${index}`, warn, text(part['filename']) || undefined));
    else warn(`${path}.content.${index}: ${text(part['type']) || 'this'} part cannot be sent to a Converse upstream; dropped`);
  });
  return blocks;
}

/** A tool's output: its text parts, and its images. */
function toolOutput(output: unknown, path: string, warn: (message: string) => void): ToolOutput {
  if (typeof output === 'string') return { texts: [output], images: [] };
  const result: ToolOutput = { texts: [], images: [] };
  records(output).forEach((part, index) => {
    const partValue = partText(part);
    if (partValue !== undefined) {
      result.texts.push(partValue);
    } else if (part['type'] === 'input_image' && typeof part['image_url'] === 'string') {
      const block = mediaFromUrl(part['image_url'], `${path}.${index}`, warn);
      if ('text' in block) result.texts.push(block.text);
      else result.images.push(block);
    } else {
      result.texts.push(`[${text(part['type']) || 'part'} omitted]`);
    }
  });
  return result;
}

