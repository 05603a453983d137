/**
 * Wire types of the Responses format (`POST /v1/responses`, responses.md), spelled as OpenAI
 * spells them. They follow the official `openai` SDK's `resources/responses/responses.ts`, cut down
 * to what llmux reads or writes; everything else a client sends is kept as unknown extra fields.
 *
 * Input items and tools are open unions: a type llmux does not know (a hosted tool, a newer item)
 * still validates and is passed through to a Responses upstream, or dropped with a warning when
 * translating.
 */

// ---------- request ----------

export type ResponsesRole = 'user' | 'assistant' | 'system' | 'developer';

export interface ResponsesInputText { type: 'input_text'; text: string; [extra: string]: unknown }
/** An image by URL (`https://…` or `data:…;base64,…`); llmux has no files API, so never by `file_id`. */
export interface ResponsesInputImage { type: 'input_image'; image_url: string; detail?: 'low' | 'high' | 'auto' | 'original'; [extra: string]: unknown }
export interface ResponsesOutputText { type: 'output_text'; text: string; annotations: unknown[]; [extra: string]: unknown }
export interface ResponsesRefusal { type: 'refusal'; refusal: string }
/** A content part of an input message; other part types are kept and dropped when translating. */
export type ResponsesContentPart =
  | ResponsesInputText
  | ResponsesInputImage
  | ResponsesOutputText
  | ResponsesRefusal
  | { type: string; [extra: string]: unknown };

/** A message; `type` may be absent (the SDK's `EasyInputMessage`). */
export interface ResponsesMessageItem {
  type?: 'message';
  id?: string;
  role: ResponsesRole;
  content: string | ResponsesContentPart[];
  status?: string;
  [extra: string]: unknown;
}

export interface ResponsesFunctionCallItem {
  type: 'function_call';
  id?: string;
  call_id: string;
  name: string;
  /** JSON text, as the model wrote it. */
  arguments: string;
  /** Set when the function belongs to a `namespace` tool (MCP servers in Codex). */
  namespace?: string;
  status?: string;
  [extra: string]: unknown;
}

/** What a tool returned: text, or content parts (text and images). */
export type ResponsesToolOutput = string | ResponsesContentPart[];

export interface ResponsesFunctionCallOutputItem { type: 'function_call_output'; id?: string; call_id: string; output: ResponsesToolOutput; [extra: string]: unknown }

export interface ResponsesCustomToolCallItem {
  type: 'custom_tool_call';
  id?: string;
  call_id: string;
  name: string;
  /** The raw text the model wrote for the tool (Codex's `apply_patch` patch). */
  input: string;
  namespace?: string;
  [extra: string]: unknown;
}

export interface ResponsesCustomToolCallOutputItem { type: 'custom_tool_call_output'; id?: string; call_id: string; output: ResponsesToolOutput; [extra: string]: unknown }

export interface ResponsesLocalShellAction {
  type: 'exec';
  command: string[];
  env: Record<string, string>;
  timeout_ms?: number | null;
  working_directory?: string | null;
  user?: string | null;
}

export interface ResponsesLocalShellCallItem {
  type: 'local_shell_call';
  id?: string;
  call_id: string;
  action: ResponsesLocalShellAction;
  status?: string;
  [extra: string]: unknown;
}

/** The output of a `local_shell_call`; its `id` is the call's `call_id`. */
export interface ResponsesLocalShellCallOutputItem { type: 'local_shell_call_output'; id: string; output: string; [extra: string]: unknown }

export interface ResponsesSummaryText { type: 'summary_text'; text: string }

export interface ResponsesReasoningItem {
  type: 'reasoning';
  id?: string;
  summary: ResponsesSummaryText[];
  /** Opaque; llmux's own seals start with `llmux.v1.` (src/responses/seal.ts). */
  encrypted_content?: string | null;
  [extra: string]: unknown;
}

/** A stored item by id; replaced by the item itself before translation (src/responses/resolve.ts). */
export interface ResponsesItemReference { type?: 'item_reference'; id: string }

export type ResponsesInputItem =
  | ResponsesMessageItem
  | ResponsesFunctionCallItem
  | ResponsesFunctionCallOutputItem
  | ResponsesCustomToolCallItem
  | ResponsesCustomToolCallOutputItem
  | ResponsesLocalShellCallItem
  | ResponsesLocalShellCallOutputItem
  | ResponsesReasoningItem
  | ResponsesItemReference
  | { type: string; [extra: string]: unknown };

export interface ResponsesFunctionTool {
  type: 'function';
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
  strict?: boolean;
  [extra: string]: unknown;
}

/** Input grammar of a custom tool; `text` (the default) is unconstrained. */
export type ResponsesCustomToolFormat = { type: 'text' } | { type: 'grammar'; syntax: 'lark' | 'regex'; definition: string };

/** A freeform tool: the model writes raw text for it (Codex's `apply_patch`). */
export interface ResponsesCustomTool { type: 'custom'; name: string; description?: string; format?: ResponsesCustomToolFormat; [extra: string]: unknown }

/** Function and custom tools grouped under a name (Codex puts each MCP server's tools in one). */
export interface ResponsesNamespaceTool {
  type: 'namespace';
  name: string;
  description?: string;
  tools: Array<ResponsesFunctionTool | ResponsesCustomTool>;
  [extra: string]: unknown;
}

export interface ResponsesLocalShellTool { type: 'local_shell' }

/** Hosted tools (`web_search`, `mcp`, …) and newer types are kept as they came. */
export type ResponsesTool =
  | ResponsesFunctionTool
  | ResponsesCustomTool
  | ResponsesNamespaceTool
  | ResponsesLocalShellTool
  | { type: string; [extra: string]: unknown };

export type ResponsesToolChoice =
  | 'auto'
  | 'none'
  | 'required'
  | { type: 'function'; name: string; namespace?: string }
  | { type: 'custom'; name: string }
  | { type: 'allowed_tools'; mode: 'auto' | 'required'; tools: Array<Record<string, unknown>> }
  | { type: string; [extra: string]: unknown };

export type ResponsesReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

export interface ResponsesReasoningConfig {
  effort?: ResponsesReasoningEffort | null;
  summary?: 'auto' | 'concise' | 'detailed' | null;
  [extra: string]: unknown;
}

export type ResponsesTextFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown>; strict?: boolean | null; description?: string };

export interface ResponsesTextConfig { format?: ResponsesTextFormat; verbosity?: 'low' | 'medium' | 'high' | null; [extra: string]: unknown }

/**
 * A validated request. Top-level parameters sent as `null` are left out (null means "not set"),
 * so `undefined` is the only "absent".
 */
export interface ResponsesRequest {
  model: string;
  input?: string | ResponsesInputItem[];
  instructions?: string;
  tools?: ResponsesTool[];
  tool_choice?: ResponsesToolChoice;
  parallel_tool_calls?: boolean;
  max_output_tokens?: number;
  temperature?: number;
  top_p?: number;
  reasoning?: ResponsesReasoningConfig;
  text?: ResponsesTextConfig;
  store?: boolean;
  stream?: boolean;
  previous_response_id?: string;
  include?: string[];
  metadata?: Record<string, string>;
  user?: string;
  safety_identifier?: string;
  prompt_cache_key?: string;
  service_tier?: string;
  truncation?: 'auto' | 'disabled';
  [extra: string]: unknown;
}

// ---------- answer ----------

export type ResponsesItemStatus = 'in_progress' | 'completed' | 'incomplete';

export interface ResponsesOutputMessage {
  type: 'message';
  id: string;
  role: 'assistant';
  status: ResponsesItemStatus;
  content: Array<ResponsesOutputText | ResponsesRefusal>;
}

export interface ResponsesOutputFunctionCall {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  namespace?: string;
  status: ResponsesItemStatus;
}

export interface ResponsesOutputCustomToolCall { type: 'custom_tool_call'; id: string; call_id: string; name: string; input: string; namespace?: string }

export interface ResponsesOutputLocalShellCall { type: 'local_shell_call'; id: string; call_id: string; action: ResponsesLocalShellAction; status: ResponsesItemStatus }

export interface ResponsesOutputReasoning { type: 'reasoning'; id: string; summary: ResponsesSummaryText[]; encrypted_content?: string }

export type ResponsesOutputItem =
  | ResponsesOutputMessage
  | ResponsesOutputFunctionCall
  | ResponsesOutputCustomToolCall
  | ResponsesOutputLocalShellCall
  | ResponsesOutputReasoning;

export interface ResponsesUsage {
  /** Every input token, cached ones included. */
  input_tokens: number;
  /** `cache_write_tokens`: input tokens written to the prompt cache (Anthropic's cache creation). */
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export type ResponsesStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** The request fields a response object repeats, with OpenAI's defaults filled in. */
export interface ResponseEcho {
  instructions: string | null;
  max_output_tokens: number | null;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  reasoning: { effort: ResponsesReasoningEffort | null; summary: string | null };
  store: boolean;
  temperature: number | null;
  text: ResponsesTextConfig;
  tool_choice: ResponsesToolChoice;
  tools: ResponsesTool[];
  top_p: number | null;
  truncation: 'auto' | 'disabled';
  metadata: Record<string, string>;
  /** Only when the request gave one: the description types it a string, never null. */
  user?: string;
}

export interface ResponsesResponse extends ResponseEcho {
  id: string;
  object: 'response';
  /** Unix seconds. */
  created_at: number;
  status: ResponsesStatus;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null;
  /** The llmux model id that answered, never the upstream's. */
  model: string;
  output: ResponsesOutputItem[];
  usage: ResponsesUsage | null;
}

// ---------- stream ----------

/** The events llmux writes when it translates a stream, as `event: <type>` + `data: <JSON>`. */
export type ResponsesStreamEvent = { sequence_number: number } & (
  | { type: 'response.created' | 'response.in_progress' | 'response.completed' | 'response.incomplete' | 'response.failed'; response: ResponsesResponse }
  | { type: 'response.output_item.added' | 'response.output_item.done'; output_index: number; item: ResponsesOutputItem }
  | { type: 'response.content_part.added' | 'response.content_part.done'; item_id: string; output_index: number; content_index: number; part: ResponsesOutputText | ResponsesRefusal }
  | { type: 'response.output_text.delta'; item_id: string; output_index: number; content_index: number; delta: string; logprobs: unknown[] }
  | { type: 'response.output_text.done'; item_id: string; output_index: number; content_index: number; text: string; logprobs: unknown[] }
  | { type: 'response.refusal.delta'; item_id: string; output_index: number; content_index: number; delta: string }
  | { type: 'response.refusal.done'; item_id: string; output_index: number; content_index: number; refusal: string }
  | { type: 'response.function_call_arguments.delta'; item_id: string; output_index: number; delta: string }
  | { type: 'response.function_call_arguments.done'; item_id: string; output_index: number; name: string; arguments: string }
  | { type: 'response.custom_tool_call_input.delta'; item_id: string; output_index: number; delta: string }
  | { type: 'response.custom_tool_call_input.done'; item_id: string; output_index: number; input: string }
  | { type: 'response.reasoning_summary_part.added' | 'response.reasoning_summary_part.done'; item_id: string; output_index: number; summary_index: number; part: ResponsesSummaryText }
  | { type: 'response.reasoning_summary_text.delta'; item_id: string; output_index: number; summary_index: number; delta: string }
  | { type: 'response.reasoning_summary_text.done'; item_id: string; output_index: number; summary_index: number; text: string }
);
