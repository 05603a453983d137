/**
 * Wire types of Google's Gemini format (generateContent, streamGenerateContent, countTokens, the
 * models list and the error body), spelled as the REST API and the `@google/genai` SDK spell them:
 * camelCase. The API also takes snake_case field names (proto JSON); ./gemini-case.ts turns them
 * into these before anything else reads a body.
 *
 * These describe a validated request and the answers llmux reads or writes; fields newer than this
 * file may be present and pass through untouched to a Gemini upstream.
 */

/** Who wrote a content: `user` (the caller, tool results included) or `model`. */
export type GeminiRole = 'user' | 'model';

/** Inline bytes, base64: `inlineData`. */
export interface GeminiBlob { mimeType: string; data: string; [extra: string]: unknown }

/** A file by URI (Google Files API, Cloud Storage, or a public http(s) URL): `fileData`. */
export interface GeminiFileData { fileUri: string; mimeType?: string; [extra: string]: unknown }

export interface GeminiFunctionCall { name: string; args?: Record<string, unknown>; id?: string; [extra: string]: unknown }

/** Media inside a function response (Gemini 3's multimodal function responses). */
export interface GeminiFunctionResponsePart { inlineData?: GeminiBlob; fileData?: GeminiFileData; [extra: string]: unknown }

export interface GeminiFunctionResponse {
  name: string;
  /** Google documents `output` for the result and `error` for a failure; any object is taken. */
  response?: Record<string, unknown>;
  id?: string;
  parts?: GeminiFunctionResponsePart[];
  [extra: string]: unknown;
}

export interface GeminiExecutableCode { code: string; language?: string; id?: string; [extra: string]: unknown }
export interface GeminiCodeExecutionResult { outcome?: string; output?: string; id?: string; [extra: string]: unknown }

/**
 * One part of a content. Exactly one data field (`text`, `inlineData`, `fileData`, `functionCall`,
 * `functionResponse`, `executableCode`, `codeExecutionResult`, and the server-side `toolCall` /
 * `toolResponse`) is set; `thought`, `thoughtSignature` and `videoMetadata` qualify it.
 */
export interface GeminiPart {
  text?: string;
  inlineData?: GeminiBlob;
  fileData?: GeminiFileData;
  functionCall?: GeminiFunctionCall;
  functionResponse?: GeminiFunctionResponse;
  executableCode?: GeminiExecutableCode;
  codeExecutionResult?: GeminiCodeExecutionResult;
  /** The part is the model's thinking (a thought summary), not its answer. */
  thought?: boolean;
  /** Opaque, base64: what the model needs back to continue its reasoning (Gemini 3 checks it on function calls). */
  thoughtSignature?: string;
  [extra: string]: unknown;
}

export interface GeminiContent { role?: string; parts: GeminiPart[]; [extra: string]: unknown }

/**
 * Google's schema subset (OpenAPI 3.0): upper-case `type` (lower case is taken too), `nullable`
 * instead of a `null` type, string `enum` values. The int64 bounds come as strings from the SDK.
 */
export interface GeminiSchema {
  type?: string;
  format?: string;
  title?: string;
  description?: string;
  nullable?: boolean;
  enum?: unknown[];
  properties?: Record<string, GeminiSchema>;
  required?: string[];
  propertyOrdering?: string[];
  items?: GeminiSchema;
  anyOf?: GeminiSchema[];
  minItems?: number | string;
  maxItems?: number | string;
  minLength?: number | string;
  maxLength?: number | string;
  minProperties?: number | string;
  maxProperties?: number | string;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  default?: unknown;
  example?: unknown;
  [extra: string]: unknown;
}

export interface GeminiFunctionDeclaration {
  name: string;
  description?: string;
  /** Google's schema subset; mutually exclusive with `parametersJsonSchema`. */
  parameters?: GeminiSchema;
  /** A JSON Schema taken as it is (what Gemini CLI sends). */
  parametersJsonSchema?: unknown;
  response?: GeminiSchema;
  responseJsonSchema?: unknown;
  [extra: string]: unknown;
}

/** One tool entry; function declarations and Google's own tools are separate keys. */
export interface GeminiTool {
  functionDeclarations?: GeminiFunctionDeclaration[];
  googleSearch?: Record<string, unknown>;
  googleSearchRetrieval?: Record<string, unknown>;
  codeExecution?: Record<string, unknown>;
  urlContext?: Record<string, unknown>;
  [extra: string]: unknown;
}

/** `MODE_UNSPECIFIED`, `AUTO`, `ANY`, `NONE`, `VALIDATED`; newer values are taken as strings. */
export type GeminiFunctionCallingMode = 'MODE_UNSPECIFIED' | 'AUTO' | 'ANY' | 'NONE' | 'VALIDATED';

export interface GeminiToolConfig {
  functionCallingConfig?: { mode?: GeminiFunctionCallingMode | string; allowedFunctionNames?: string[]; [extra: string]: unknown };
  [extra: string]: unknown;
}

/** `MINIMAL`, `LOW`, `MEDIUM`, `HIGH` (Gemini 3); newer values are taken as strings. */
export type GeminiThinkingLevel = 'THINKING_LEVEL_UNSPECIFIED' | 'MINIMAL' | 'LOW' | 'MEDIUM' | 'HIGH';

export interface GeminiThinkingConfig {
  /** Tokens; 0 turns thinking off (where the model allows it), -1 lets the model decide. */
  thinkingBudget?: number;
  thinkingLevel?: GeminiThinkingLevel | string;
  /** Return thought summaries as `thought: true` parts. */
  includeThoughts?: boolean;
  [extra: string]: unknown;
}

export interface GeminiGenerationConfig {
  temperature?: number;
  topP?: number;
  topK?: number;
  maxOutputTokens?: number;
  stopSequences?: string[];
  candidateCount?: number;
  responseMimeType?: string;
  responseSchema?: GeminiSchema;
  responseJsonSchema?: unknown;
  thinkingConfig?: GeminiThinkingConfig;
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  responseLogprobs?: boolean;
  logprobs?: number;
  responseModalities?: string[];
  [extra: string]: unknown;
}

export interface GeminiSafetySetting { category: string; threshold: string; [extra: string]: unknown }

/** The body of `models/{model}:generateContent` and `:streamGenerateContent` (the model and streaming are in the URL). */
export interface GeminiRequest {
  contents: GeminiContent[];
  systemInstruction?: GeminiContent;
  tools?: GeminiTool[];
  toolConfig?: GeminiToolConfig;
  generationConfig?: GeminiGenerationConfig;
  safetySettings?: GeminiSafetySetting[];
  /** A Google cached-content resource (`cachedContents/…`). */
  cachedContent?: string;
  [extra: string]: unknown;
}

/** The body of `models/{model}:countTokens`: `contents`, or a whole request with its system instruction and tools. */
export interface GeminiCountTokensRequest {
  contents?: GeminiContent[];
  generateContentRequest?: GeminiRequest & { model?: string };
  [extra: string]: unknown;
}

export interface GeminiModalityTokenCount { modality: string; tokenCount: number }

export interface GeminiCountTokensResponse {
  totalTokens: number;
  cachedContentTokenCount?: number;
  promptTokensDetails?: GeminiModalityTokenCount[];
}

/** Why a candidate stopped; newer values are taken as strings. */
export type GeminiFinishReason =
  | 'FINISH_REASON_UNSPECIFIED'
  | 'STOP'
  | 'MAX_TOKENS'
  | 'SAFETY'
  | 'RECITATION'
  | 'LANGUAGE'
  | 'OTHER'
  | 'BLOCKLIST'
  | 'PROHIBITED_CONTENT'
  | 'SPII'
  | 'MALFORMED_FUNCTION_CALL'
  | 'IMAGE_SAFETY'
  | 'UNEXPECTED_TOOL_CALL'
  | 'TOO_MANY_TOOL_CALLS';

export interface GeminiSafetyRating { category: string; probability: string; blocked?: boolean; [extra: string]: unknown }

/** A quoted source; the Gemini API names the list `citationSources` (Vertex: `citations`). */
export interface GeminiCitationSource { startIndex?: number; endIndex?: number; uri?: string; title?: string; license?: string; [extra: string]: unknown }

export interface GeminiCandidate {
  content?: GeminiContent;
  finishReason?: GeminiFinishReason | string;
  finishMessage?: string;
  safetyRatings?: GeminiSafetyRating[];
  citationMetadata?: { citationSources?: GeminiCitationSource[]; citations?: GeminiCitationSource[] };
  index?: number;
  tokenCount?: number;
  groundingMetadata?: Record<string, unknown>;
  [extra: string]: unknown;
}

/**
 * Token counts of one answer. `promptTokenCount` includes `cachedContentTokenCount`;
 * `candidatesTokenCount` excludes thinking, which `thoughtsTokenCount` holds; `totalTokenCount` is
 * prompt + candidates + thoughts + tool-use prompt.
 */
export interface GeminiUsageMetadata {
  promptTokenCount?: number;
  cachedContentTokenCount?: number;
  candidatesTokenCount?: number;
  toolUsePromptTokenCount?: number;
  thoughtsTokenCount?: number;
  totalTokenCount?: number;
  promptTokensDetails?: GeminiModalityTokenCount[];
  cacheTokensDetails?: GeminiModalityTokenCount[];
  candidatesTokensDetails?: GeminiModalityTokenCount[];
  [extra: string]: unknown;
}

/** A whole answer, and each event of a stream (one whole object per `data:` event). */
export interface GeminiResponse {
  candidates?: GeminiCandidate[];
  promptFeedback?: { blockReason?: string; safetyRatings?: GeminiSafetyRating[]; [extra: string]: unknown };
  usageMetadata?: GeminiUsageMetadata;
  /** llmux answers with its own model id here. */
  modelVersion?: string;
  responseId?: string;
  [extra: string]: unknown;
}

/** A catalog entry as `GET /v1beta/models` lists it. */
export interface GeminiModel {
  /** `models/{id}`. */
  name: string;
  baseModelId?: string;
  version: string;
  displayName: string;
  description?: string;
  inputTokenLimit: number;
  outputTokenLimit: number;
  /** `generateContent`, `streamGenerateContent`, `countTokens`, … */
  supportedGenerationMethods: string[];
  thinking?: boolean;
  temperature?: number;
  maxTemperature?: number;
  topP?: number;
  topK?: number;
}

export interface GeminiModelList { models: GeminiModel[]; nextPageToken?: string }

/** The status names of Google's error body (google.rpc.Code), those llmux answers with. */
export type GeminiStatus =
  | 'INVALID_ARGUMENT'
  | 'FAILED_PRECONDITION'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'NOT_FOUND'
  | 'ABORTED'
  | 'RESOURCE_EXHAUSTED'
  | 'CANCELLED'
  | 'INTERNAL'
  | 'UNIMPLEMENTED'
  | 'UNAVAILABLE'
  | 'DEADLINE_EXCEEDED';

/** How long to wait before retrying, as a 429 carries it: `retryDelay` is a duration like `"34s"`. */
export interface GeminiRetryInfo { '@type': 'type.googleapis.com/google.rpc.RetryInfo'; retryDelay: string }

/** Google's error body: `{"error": {"code", "message", "status", "details"?}}`. */
export interface GeminiErrorBody {
  error: {
    /** The HTTP status. */
    code: number;
    message: string;
    status: GeminiStatus | string;
    details?: Array<GeminiRetryInfo | Record<string, unknown>>;
  };
}
