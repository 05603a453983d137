/**
 * The end-user id a chat upstream gets (llmux.md section 5): OpenAI refuses a `user` longer than 64
 * characters, and Claude Code's `metadata.user_id` is about 150. A longer id is replaced by the
 * SHA-256 of it in hex (64 characters): stable, so the upstream still tells users apart, and the
 * same id always gives the same value. Shorter ids pass unchanged.
 */
import { createHash } from 'node:crypto';

/** OpenAI's limit on `user`. */
export const MAX_CHAT_USER_LENGTH = 64;

/** The last long id and its hash: an agent sends the same id on every turn. */
let last = { userId: '', hashed: '' };

export function chatUserId(userId: string): string {
  if (userId.length <= MAX_CHAT_USER_LENGTH) return userId;
  if (userId !== last.userId) last = { userId, hashed: createHash('sha256').update(userId).digest('hex') };
  return last.hashed;
}
