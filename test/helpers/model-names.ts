/**
 * What a client should receive from a pass-through answer once llmux names its own model id
 * (llmux.md section 3): the upstream's bytes with the top-level `model` value replaced. Written with
 * a regex, apart from the gateway's byte scan, and checked against parsed JSON by the tests using it.
 */
import type { WireFormat } from '../../src/formats/wire.ts';

const MODEL_VALUE = /"model"(\s*:\s*)"(?:[^"\\]|\\.)*"/;

/**
 * A stream with, in every chat chunk and in a messages `message_start`, the first `"model": "…"` of
 * the data line replaced (the top-level one in every recording).
 */
export function withLlmuxModel(format: WireFormat, bytes: Buffer, model: string): Buffer {
  const lines = bytes.toString('utf8').split('\n');
  let event = '';
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i] as string;
    if (line.startsWith('event:')) event = line.slice(6).trim();
    if (line === '') event = '';
    if (!line.startsWith('data:')) continue;
    if (format === 'messages' && event !== 'message_start') continue;
    lines[i] = line.replace(MODEL_VALUE, (_all, colon: string) => `"model"${colon}${JSON.stringify(model)}`);
  }
  return Buffer.from(lines.join('\n'));
}

/** A whole JSON answer with its first `"model": "…"` (the top-level one in every recording) replaced. */
export function jsonWithLlmuxModel(bytes: Buffer, model: string): Buffer {
  return Buffer.from(bytes.toString('utf8').replace(MODEL_VALUE, (_all, colon: string) => `"model"${colon}${JSON.stringify(model)}`));
}
