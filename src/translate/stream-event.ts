/**
 * An upstream stream event's data read as the JSON object every provider sends: the stream decoders
 * (./chat-decoder.ts, ./messages-decoder.ts) read their events through this, and fail the answer as
 * incomplete when it says why not.
 */
import { isRecord } from '../common/json.ts';

/** The event's data as a JSON object, or the reason (for the in-stream error) it is not one. */
export function eventObject(data: string): Record<string, unknown> | string {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return 'upstream stream event is not valid JSON; the answer is incomplete';
  }
  return isRecord(value) ? value : 'upstream stream event is not a JSON object; the answer is incomplete';
}
