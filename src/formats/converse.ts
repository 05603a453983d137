/**
 * Wire types of Amazon Bedrock's Converse format (Converse and ConverseStream, llmux.md section 8):
 * what llmux sends to a `converse` provider and what it reads back, spelled as the Bedrock Runtime
 * API reference and `@aws-sdk/client-bedrock-runtime` spell them on the wire (camelCase; unions as
 * objects with exactly one member set; blobs as base64 strings).
 *
 * No client speaks Converse: llmux only ever writes its requests (src/translate/*-to-converse.ts)
 * and reads its answers (src/translate/converse-decoder.ts), leniently, so these types say what llmux
 * writes and which answer fields it reads; everything else an answer carries (`metrics`, `trace`,
 * `additionalModelResponseFields`, Bedrock's `p` padding on stream events) is left unread.
 *
 * The model and whether the answer streams are in the path (`/model/{id}/converse` and
 * `/converse-stream`), never in the body.
 */

/** Who wrote a message. */
export type ConverseRole = 'user' | 'assistant';

/** The image formats Converse takes (`ImageFormat`). */
export type ConverseImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';

/** The document formats Converse takes (`DocumentFormat`). */
export type ConverseDocumentFormat = 'pdf' | 'csv' | 'doc' | 'docx' | 'xls' | 'xlsx' | 'html' | 'txt' | 'md';

/** An image, its bytes base64 (`ImageBlock`; an S3 location is never sent by llmux). */
export interface ConverseImageBlock { format: ConverseImageFormat; source: { bytes: string } }

/** A document (`DocumentBlock`): its name may hold only letters, digits, single spaces, `-`, `()` and `[]`. */
export interface ConverseDocumentBlock { format: ConverseDocumentFormat; name: string; source: { bytes: string } }

/** A tool call the model made (`ToolUseBlock`); `input` is the arguments object. */
export interface ConverseToolUseBlock { toolUseId: string; name: string; input: Record<string, unknown> }

/** One piece of a tool result (`ToolResultContentBlock`). */
export type ConverseToolResultContent = { text: string } | { json: unknown } | { image: ConverseImageBlock } | { document: ConverseDocumentBlock };

/** A tool's result (`ToolResultBlock`); `status` is taken by Claude and Nova only. */
export interface ConverseToolResultBlock { toolUseId: string; content: ConverseToolResultContent[]; status?: 'success' | 'error' }

/** Reasoning (`ReasoningContentBlock`): text with the signature that lets it be sent back, or redacted bytes (base64). */
export type ConverseReasoningBlock = { reasoningText: { text: string; signature?: string } } | { redactedContent: string };

/** One block of a message's content (`ContentBlock`): exactly one member. */
export type ConverseContentBlock =
  | { text: string }
  | { image: ConverseImageBlock }
  | { document: ConverseDocumentBlock }
  | { toolUse: ConverseToolUseBlock }
  | { toolResult: ConverseToolResultBlock }
  | { reasoningContent: ConverseReasoningBlock };

export interface ConverseMessage { role: ConverseRole; content: ConverseContentBlock[] }

/** A system block (`SystemContentBlock`): llmux sends text. */
export interface ConverseSystemBlock { text: string }

/** A tool the model may call (`Tool` with its `toolSpec`). */
export interface ConverseTool {
  toolSpec: { name: string; description?: string; inputSchema: { json: Record<string, unknown> } };
}

/** `ToolChoice`: `{auto: {}}`, `{any: {}}` or `{tool: {name}}`. */
export type ConverseToolChoice = { auto: Record<string, never> } | { any: Record<string, never> } | { tool: { name: string } };

export interface ConverseToolConfig { tools: ConverseTool[]; toolChoice?: ConverseToolChoice }

/** `InferenceConfiguration`: what every model takes; the rest goes in `additionalModelRequestFields`. */
export interface ConverseInferenceConfig {
  maxTokens?: number;
  /** 0 to 1. */
  temperature?: number;
  topP?: number;
  stopSequences?: string[];
}

/** The body of a Converse or ConverseStream request. */
export interface ConverseRequest {
  messages: ConverseMessage[];
  system?: ConverseSystemBlock[];
  inferenceConfig?: ConverseInferenceConfig;
  toolConfig?: ConverseToolConfig;
  /** Fields of the model's own request body, merged into it by Bedrock (a model family's reasoning settings, `top_k`). */
  additionalModelRequestFields?: Record<string, unknown>;
}

/** `StopReason`, as of the SDK this was written against; a newer one is read as a finished answer. */
export type ConverseStopReason =
  | 'end_turn'
  | 'tool_use'
  | 'max_tokens'
  | 'stop_sequence'
  | 'guardrail_intervened'
  | 'content_filtered'
  | 'malformed_model_output'
  | 'malformed_tool_use'
  | 'model_context_window_exceeded';

/**
 * `TokenUsage`. `inputTokens` counts only the input that was neither read from nor written to the
 * prompt cache (AWS's prompt-caching guide: total input = `inputTokens` + `cacheReadInputTokens` +
 * `cacheWriteInputTokens`), as Anthropic's `input_tokens` does.
 */
export interface ConverseUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/** A whole Converse answer (`ConverseResponse`), the members llmux reads. */
export interface ConverseResponse {
  output: { message: ConverseMessage };
  stopReason: ConverseStopReason;
  usage: ConverseUsage;
  metrics?: { latencyMs: number };
}

/**
 * The events of a ConverseStream answer as server-sent events (src/platforms/aws/bedrock-stream.ts
 * names each after its `:event-type`), interned by the SSE parser; `error` is the in-stream error
 * the Bedrock platform writes for an exception frame.
 */
export const CONVERSE_EVENT_NAMES: readonly string[] = [
  'messageStart', 'contentBlockStart', 'contentBlockDelta', 'contentBlockStop', 'messageStop', 'metadata', 'error',
];
