/**
 * The model families a Converse request is shaped for, and their reasoning (llmux.md section 8):
 * what ./converse-build.ts and the translators into Converse ask when a model family decides.
 *
 * Decisions where the spec is silent (the Bedrock Runtime API reference and the model families'
 * parameter pages decide, and these notes record how):
 * - The family is read from the model id: `[region.]provider.model…`, or an ARN's last part (an
 *   application inference profile names no model: its family is unknown, and gets the plainest
 *   request). The few models that take no system prompt (Mistral 7B, Mixtral 8x7B, Titan Text)
 *   are named here.
 * - Reasoning, for models marked `reasoning` only, in `additionalModelRequestFields` as each family
 *   takes it:
 *   - Claude (`anthropic.`): `thinking: {type: "enabled", budget_tokens}` by the one budget rule
 *     (./thinking-budget.ts), as for a messages upstream, with the same refusals (no thinking with
 *     a forced tool, nor when continuing a tool loop without the signed thinking of its turn) and
 *     thinking dropping `temperature` and keeping `top_p` only from 0.95. A messages client's own
 *     `thinking` goes as it is (./messages-to-converse.ts).
 *   - Nova (`amazon.nova`): `reasoningConfig: {type: "enabled", maxReasoningEffort}`, low / medium
 *     / high (minimal is low, xhigh and max are high; none sends nothing: Nova does not reason by
 *     default).
 *   - gpt-oss (`openai.gpt-oss`) and Kimi (`moonshot`): `reasoning_effort` low / medium / high.
 *   - Other OpenAI models on Bedrock: `reasoning: {effort}`, the effort as given (minimal as low).
 *   - Every other family (Llama, Mistral, DeepSeek, Qwen, …) has no setting Converse passes: the
 *     effort is dropped with a warning (DeepSeek-R1 reasons regardless).
 *   - A thinking budget (a messages client's) is an effort for the families that take efforts:
 *     under 4096 low, under 16384 medium, else high (the budget table's inverse).
 * - Reasoning in the history goes back only to Claude, and only signed (`reasoningText` with its
 *   `signature`) or redacted (`redactedContent`): Claude's signatures mean nothing to other
 *   families, which refuse the field (gpt-oss: "doesn't support the reasoningContent…signature
 *   field"), and Claude refuses unsigned thinking.
 */
import type { ConverseContentBlock } from '../formats/converse.ts';
import type { CarriedItem } from './carried.ts';
import type { UpstreamModel } from './messages-to-chat.ts';
import type { Turn } from './message-turns.ts';
import type { ConverseTurns, Inference } from './converse-build.ts';
import { MIN_THINKING_BUDGET, effortBudget, planThinking } from './thinking-budget.ts';

/** Which model family's rules a Converse request follows (see the header). */
export type ConverseFamily = 'anthropic' | 'nova' | 'gpt-oss' | 'openai' | 'moonshot' | 'mistral' | 'other';

type Warn = (message: string) => void;

/** Cross-region inference profile prefixes before a model id (`us.anthropic.…`, `global.…`). */
const REGION_PREFIX = /^(?:us|us-gov|eu|apac|jp|au|ca|in|global)\./;
/** Models Bedrock documents as taking no system prompt through Converse. */
const NO_SYSTEM_PROMPT = /^(?:mistral\.mistral-7b-instruct|mistral\.mixtral-8x7b-instruct|amazon\.titan-text)/;
/** Efforts as the levels Nova, gpt-oss and Kimi take: low, medium, high. */
const LEVELS: ReadonlyMap<string, string> = new Map([['minimal', 'low'], ['low', 'low'], ['medium', 'medium'], ['high', 'high'], ['xhigh', 'high'], ['max', 'high']]);

/** A model id as Bedrock names base models (`provider.model…`): an ARN's last part, without a cross-region prefix. */
function baseModelId(upstreamId: string): string {
  return upstreamId.slice(upstreamId.lastIndexOf('/') + 1).toLowerCase().replace(REGION_PREFIX, '');
}

/** The family of a model id as Bedrock names models: `[region.]provider.model…`, or an ARN ending in one. */
export function converseFamily(upstreamId: string): ConverseFamily {
  const id = baseModelId(upstreamId);
  if (id.startsWith('anthropic.')) return 'anthropic';
  if (id.startsWith('amazon.nova')) return 'nova';
  if (id.startsWith('openai.gpt-oss')) return 'gpt-oss';
  if (id.startsWith('openai.')) return 'openai';
  if (id.startsWith('moonshot')) return 'moonshot';
  if (id.startsWith('mistral.')) return 'mistral';
  return 'other';
}

/** Whether the model takes a system prompt (see the header). */
export function takesSystemPrompt(upstreamId: string): boolean {
  return !NO_SYSTEM_PROMPT.test(baseModelId(upstreamId));
}

/** Whether the turns end answering calls of an assistant turn that does not start with signed reasoning. */
export function continuesUnsignedToolLoop(turns: ReadonlyArray<Turn<ConverseContentBlock>>): boolean {
  const last = turns[turns.length - 1];
  if (last?.role !== 'user' || !last.blocks.some((block) => 'toolResult' in block)) return false;
  const first = turns[turns.length - 2]?.blocks[0];
  return first === undefined || !('reasoningContent' in first);
}

/** A reasoning block for the history, when the family can take it back (see the header); else undefined. */
export function historyReasoning(family: ConverseFamily, text: string, signature: string | undefined, redacted: string | undefined): ConverseContentBlock | undefined {
  if (family !== 'anthropic') return undefined;
  if (redacted !== undefined) return { reasoningContent: { redactedContent: redacted } };
  if (signature === undefined || signature === '') return undefined;
  return { reasoningContent: { reasoningText: { text, signature } } };
}

/** A thinking budget as an effort word, for the families that take efforts (the budget table's inverse). */
export function budgetEffort(budget: number): string {
  if (budget < 4096) return 'low';
  if (budget < 16384) return 'medium';
  return 'high';
}

/**
 * The family's reasoning fields for an effort (chat's `reasoning_effort`, Responses'
 * `reasoning.effort`, an effort read from a messages `thinking`); undefined, with a warning when the
 * family has no setting, when nothing is to be sent. Not for Claude, which takes a budget.
 */
export function effortFields(family: ConverseFamily, effort: string, field: string, warn: Warn): Record<string, unknown> | undefined {
  switch (family) {
    case 'nova': {
      const level = LEVELS.get(effort);
      return level === undefined ? undefined : { reasoningConfig: { type: 'enabled', maxReasoningEffort: level } };
    }
    case 'gpt-oss':
    case 'moonshot': {
      const level = LEVELS.get(effort);
      return level === undefined ? undefined : { reasoning_effort: level };
    }
    case 'openai':
      return { reasoning: { effort: effort === 'minimal' ? 'low' : effort } };
    default:
      warn(`${field}: dropped, this model on Converse takes no reasoning setting`);
      return undefined;
  }
}

/** A reasoning effort a client asked for (chat's `reasoning_effort`, Responses' `reasoning.effort`). */
export interface EffortAsked {
  effort: string | undefined;
  /** Where it was asked, for warnings. */
  field: string;
  /** The output cap: the client's own (`requested`), else the one llmux would choose, which Claude's thinking may raise. */
  cap: { value: number; requested: boolean };
  /** A tool is forced (`required`, or a named one). */
  forcedTool: boolean;
}

/**
 * The reasoning fields an effort asks of the model's family, and the inference settings as they
 * leave them (models marked `reasoning` only). Claude's thinking follows the budget rule of a
 * messages upstream (./thinking-budget.ts): refused with a warning when a tool is forced or the
 * request continues a tool loop without its signed thinking; it sets the cap and drops
 * `temperature`, and `top_p` under 0.95, which Claude refuses beside thinking.
 */
export function effortSettings(model: UpstreamModel, turns: ConverseTurns, asked: EffortAsked, inference: Inference, warn: Warn): { inference: Inference; fields: Record<string, unknown> | undefined } {
  const { effort, field, cap } = asked;
  if (!model.reasoning || effort === undefined) return { inference, fields: undefined };
  const family = converseFamily(model.upstreamId);
  if (family !== 'anthropic') return { inference, fields: effortFields(family, effort, field, warn) };
  const wanted = effortBudget(effort);
  if (wanted === undefined) return { inference, fields: undefined };
  if (asked.forcedTool) {
    warn(`${field}: dropped, Claude cannot think with a forced tool choice`);
    return { inference, fields: undefined };
  }
  if (continuesUnsignedToolLoop(turns.turns)) {
    warn(`${field}: dropped, Claude wants the signed thinking of the assistant turn this request continues, and the request has none`);
    return { inference, fields: undefined };
  }
  const plan = planThinking(wanted, cap, model.maxOutputTokens);
  if (plan.budget === undefined) {
    warn(`${field}: dropped, an output cap of ${plan.maxTokens} leaves no room for the minimum thinking budget of ${MIN_THINKING_BUDGET} beside the answer`);
    return { inference, fields: undefined };
  }
  const topP = inference.topP !== undefined && inference.topP >= 0.95 ? inference.topP : undefined;
  return { inference: { maxTokens: plan.maxTokens, topP, stop: inference.stop }, fields: { thinking: { type: 'enabled', budget_tokens: plan.budget } } };
}

/**
 * The reasoning block a llmux seal's item replays as (llmux.md section 11): Claude's signed or
 * redacted thinking, by the rule above; none for other state.
 */
export function sealedReasoning(family: ConverseFamily, item: CarriedItem): ConverseContentBlock | undefined {
  if (item.kind === 'thinking') return historyReasoning(family, item.thinking, item.signature, undefined);
  if (item.kind === 'redacted-thinking') return historyReasoning(family, '', undefined, item.data);
  return undefined;
}
