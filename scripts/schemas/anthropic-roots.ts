/**
 * The Anthropic SDK types that test/fixtures/schemas/anthropic.json is generated from
 * (scripts/schemas/anthropic.mjs): what llmux answers in Anthropic's formats. Not part of the build.
 */
import type { ModelInfo } from '@anthropic-ai/sdk/resources/models';
import type { PageResponse } from '@anthropic-ai/sdk/core/pagination';

export type {
  Message,
  RawMessageStreamEvent,
  RawMessageStartEvent,
  RawMessageDeltaEvent,
  RawMessageStopEvent,
  RawContentBlockStartEvent,
  RawContentBlockDeltaEvent,
  RawContentBlockStopEvent,
  MessageTokensCount,
} from '@anthropic-ai/sdk/resources/messages/messages';
export type { ErrorResponse } from '@anthropic-ai/sdk/resources/shared';
export type { ModelInfo };
/** `GET /v1/models`: the SDK's `Page<ModelInfo>` reads this body. */
export type ModelInfoPage = PageResponse<ModelInfo>;
