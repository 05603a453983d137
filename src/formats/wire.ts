/**
 * Wire types of the chat and messages request formats, spelled as the providers spell them
 * (snake_case). "messages" is the Anthropic-style format, "chat" the OpenAI-style chat-completions
 * format; the Responses format's types are in ./responses-types.ts. These describe what a validated
 * request looks like; unknown extra fields may be present and are passed through on the
 * same-format path.
 */
import type { JsonObjectBytes } from '../common/json-bytes.ts';
import type { ResponsesRequest, ResponsesResponse } from './responses-types.ts';
import type { GeminiRequest, GeminiResponse } from './gemini-types.ts';
import type { ConverseRequest } from './converse.ts';

/**
 * A wire format, named by its operation: `chat` (OpenAI chat-completions), `messages` (Anthropic
 * messages), `responses` (OpenAI's Responses API) and `gemini` (Google's generateContent). The
 * config file names the first two by vendor (`"openai"`, `"anthropic"`); src/config/entries.ts maps
 * those names to these.
 */
export type WireFormat = 'chat' | 'messages' | 'responses' | 'gemini';

/**
 * The formats a provider's base URL speaks natively, the ones llmux translates to. A provider may
 * serve `responses` too (`"responses": true`), but never only that: Responses clients are the only
 * ones sent there, as they are. `converse` (Amazon Bedrock's Converse, ./converse.ts) is spoken by
 * providers only: no client speaks it, so its answers are always translated.
 */
export type ProviderFormat = 'chat' | 'messages' | 'gemini' | 'converse';

/** The format an upstream request is in: a client's format its provider serves, or the provider's own. */
export type UpstreamFormat = WireFormat | ProviderFormat;

// ---------- messages format ----------

export interface CacheControl { type: 'ephemeral'; ttl?: string }

export interface MessagesTextBlock { type: 'text'; text: string; cache_control?: CacheControl; citations?: unknown }
export interface MessagesImageBlock {
  type: 'image';
  source:
    | { type: 'base64'; media_type: string; data: string }
    | { type: 'url'; url: string };
  cache_control?: CacheControl;
}
export interface MessagesToolUseBlock { type: 'tool_use'; id: string; name: string; input: Record<string, unknown>; cache_control?: CacheControl }
export interface MessagesToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | Array<MessagesTextBlock | MessagesImageBlock | Record<string, unknown>>;
  is_error?: boolean;
  cache_control?: CacheControl;
}
export interface MessagesThinkingBlock { type: 'thinking'; thinking: string; signature?: string }
export interface MessagesRedactedThinkingBlock { type: 'redacted_thinking'; data: string }
/** A thinking block as the messages format signs it: what llmux seals for stateless Responses clients. */
export type SealableBlock = MessagesThinkingBlock | MessagesRedactedThinkingBlock;

export type MessagesContentBlock =
  | MessagesTextBlock
  | MessagesImageBlock
  | MessagesToolUseBlock
  | MessagesToolResultBlock
  | MessagesThinkingBlock
  | MessagesRedactedThinkingBlock;

export interface MessagesMessage { role: 'user' | 'assistant'; content: string | MessagesContentBlock[] }

export interface MessagesTool {
  name: string;
  description?: string;
  input_schema: { type: 'object'; properties: Record<string, unknown>; required?: string[]; [k: string]: unknown };
  cache_control?: CacheControl;
}

export type MessagesToolChoice =
  | { type: 'auto'; disable_parallel_tool_use?: boolean }
  | { type: 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

export interface MessagesRequest {
  model: string;
  messages: MessagesMessage[];
  max_tokens: number;
  system?: string | MessagesTextBlock[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stream?: boolean;
  stop_sequences?: string[];
  tools?: MessagesTool[];
  tool_choice?: MessagesToolChoice;
  thinking?: { type: 'enabled'; budget_tokens: number } | { type: 'disabled' };
  service_tier?: 'auto' | 'standard_only';
  metadata?: { user_id?: string };
  [extra: string]: unknown;
}

export interface MessagesUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  [extra: string]: unknown;
}

export type MessagesResponseBlock =
  | { type: 'text'; text: string; [extra: string]: unknown }
  | { type: 'thinking'; thinking: string; signature?: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown>; [extra: string]: unknown }
  /** A tool run on the upstream's side (`web_search`), and its results. */
  | { type: 'server_tool_use'; id: string; name: string; caller: { type: 'direct' }; input: Record<string, unknown> }
  | { type: 'web_search_tool_result'; tool_use_id: string; caller: { type: 'direct' }; content: MessagesWebSearchResult[] };

/** One page of a `web_search_tool_result`. */
export interface MessagesWebSearchResult { type: 'web_search_result'; url: string; title: string; encrypted_content: string; page_age: string | null }

export type MessagesStopReason =
  | 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'pause_turn' | 'refusal' | 'model_context_window_exceeded';

export interface MessagesResponse {
  id: string;
  type: 'message';
  role: 'assistant';
  content: MessagesResponseBlock[];
  model: string;
  stop_reason: MessagesStopReason | null;
  stop_sequence: string | null;
  usage: MessagesUsage;
  [extra: string]: unknown;
}

// ---------- chat format ----------

export type ChatContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: string } }
  | { type: string; [k: string]: unknown };

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
  /** Vendor data on the call: Gemini's OpenAI-compatible surface puts its thought signature in `google.thought_signature`. */
  extra_content?: Record<string, unknown>;
}

export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | 'function';
  content?: string | ChatContentPart[] | null;
  name?: string;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
  reasoning_content?: string | null;
  refusal?: string | null;
  [extra: string]: unknown;
}

export interface ChatTool { type: 'function'; function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean } }

export type ChatToolChoice = 'auto' | 'required' | 'none' | { type: 'function'; function: { name: string } };

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  tools?: ChatTool[];
  tool_choice?: ChatToolChoice;
  parallel_tool_calls?: boolean;
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  max_completion_tokens?: number;
  frequency_penalty?: number;
  presence_penalty?: number;
  n?: number;
  stop?: string | string[] | null;
  user?: string;
  response_format?: { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; json_schema: { name: string; schema?: Record<string, unknown>; strict?: boolean; description?: string } };
  seed?: number;
  reasoning_effort?: 'minimal' | 'low' | 'medium' | 'high' | string;
  [extra: string]: unknown;
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number; [k: string]: unknown } | null;
  completion_tokens_details?: { reasoning_tokens?: number; [k: string]: unknown } | null;
  prompt_cache_hit_tokens?: number;
  prompt_cache_miss_tokens?: number;
  [extra: string]: unknown;
}

export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

export interface ChatResponse {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: ChatMessage & { role: 'assistant'; content: string | null };
    finish_reason: ChatFinishReason | string | null;
    logprobs?: unknown;
    [extra: string]: unknown;
  }>;
  usage?: ChatUsage;
  [extra: string]: unknown;
}

// ---------- shared ----------

/** The request body of each format (Converse's only ever written by llmux). */
export interface RequestOf {
  chat: ChatRequest;
  messages: MessagesRequest;
  responses: ResponsesRequest;
  gemini: GeminiRequest;
  converse: ConverseRequest;
}

/** The whole (non-streamed) answer of each format. */
export interface AnswerOf {
  chat: ChatResponse;
  messages: MessagesResponse;
  responses: ResponsesResponse;
  gemini: GeminiResponse;
}

/**
 * A validated client request, as the pipeline carries it: the format says which body it is.
 * `version` and `beta` are the messages format's `anthropic-version` / `anthropic-beta` headers,
 * forwarded to a messages upstream.
 */
export interface ClientRequestOf<F extends WireFormat> {
  format: F;
  body: RequestOf[F];
  /** The model the client asked for (a llmux id), read by its dialect from wherever the format puts it (the body; Gemini: the path). */
  model: string;
  /** Whether the client asked for a stream (the body's `stream`; Gemini: the `:streamGenerateContent` method). */
  stream: boolean;
  version?: string | undefined;
  beta?: string | undefined;
  /**
   * How the client reads its stream when it is not server-sent events: `json-array` is one JSON
   * array written element by element (Gemini's `:streamGenerateContent` without `?alt=sse`).
   */
  framing?: 'json-array' | undefined;
  /**
   * The client's bytes, when `body` was parsed from them (`raw.value === body`: a body changed since,
   * by validation or by the request's turn, is a new object and no longer matches them).
   */
  raw?: JsonObjectBytes | undefined;
}

/** A client request of any format; functions generic over `F` take `ClientRequestOf<F>`. */
export type ClientRequest = { [F in WireFormat]: ClientRequestOf<F> }[WireFormat];

/** Token usage in one neutral shape, read from any format; what the limiter and the log use. */
export interface TokenUsage {
  /** Input tokens not read from or written to a cache. */
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
}
