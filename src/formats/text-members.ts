/**
 * Which members of a request body llmux reads lazily (issue 26): the members whose string values
 * are text a model reads and llmux only passes on — message and block text, tool results, tool
 * descriptions, tool-call arguments and outputs, instructions. A
 * body's long values of these members are left as the client's bytes, and what is parsed holds
 * references to them (src/common/json-lazy.ts). So no rule over a request body (validation, the
 * estimate, traits, the conversation key, the translators) may read the characters of such a
 * value: it may check that it is a string, pass it on, or join it with other text; anything more
 * takes `realText` (or `textUnits` for its length) first.
 *
 * Objects under the opaque members are taken whole (a tool's `input`, serialised into `arguments`;
 * schemas, reshaped for some upstreams; metadata, whose values are checked for length): nothing in
 * them is left as bytes.
 */
import type { LazyMembers } from '../common/json-bytes.ts';
import { LAZY_TEXT_BYTES } from '../common/json-lazy.ts';

/**
 * Bodies shorter than this are parsed whole. Measured in one process, CPU per read of a messages
 * body (validated, estimated) whole against lazily: 465 B 7.9 / 9.0 µs, 46 KB 98-132 / 145-169,
 * 68 KB 215 / 154, 135 KB 495 / 295, 208 KB 1,112 / 563 (bench/.tmp on a shared machine): the
 * whole parse grows faster than the body (two-byte strings, the tree's garbage), the lazy read's
 * walk and skeleton cost more below about 64 KB than they save.
 */
export const LAZY_BODY_BYTES = 64 * 1024;

/** What every llmux seal starts with (`llmux.v1.`, `llmux.v2.`, …): the walk notes a body that holds one. */
export const SEAL_START = 'llmux.v';

export const LAZY_REQUEST_MEMBERS: LazyMembers = {
  // Not `thinking`, `signature` or `reasoning_content`: the carried state (llmux.md section 11)
  // reads them, to open llmux's seals and to compare replayed reasoning.
  text: new Set(['text', 'content', 'description', 'arguments', 'output', 'instructions', 'input', 'system']),
  opaque: new Set(['input', 'input_schema', 'parameters', 'schema', 'metadata']),
  minBytes: LAZY_TEXT_BYTES,
  minBodyBytes: LAZY_BODY_BYTES,
  mark: Buffer.from(SEAL_START),
};
