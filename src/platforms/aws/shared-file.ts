/**
 * AWS's shared credentials file (`~/.aws/credentials`, or `AWS_SHARED_CREDENTIALS_FILE`): INI
 * sections named by profile, each with `aws_access_key_id`, `aws_secret_access_key` and optionally
 * `aws_session_token`. Only static keys are read; a profile that assumes a role, uses SSO or runs a
 * credential process is reported as such rather than silently skipped.
 */
import type { AwsCredentials } from './sigv4.ts';

/** Sections of an INI text: `[name]` → its `key = value` pairs (keys lower-cased). */
export function parseIni(text: string): Map<string, Map<string, string>> {
  const sections = new Map<string, Map<string, string>>();
  let current: Map<string, string> | undefined;
  for (const raw of text.split(/\r?\n/)) {
    // An indented line continues the setting above it (`s3 =` then `  max_concurrent_requests = 2`),
    // as in botocore's parser: never a key of its own.
    if (/^\s/.test(raw) && raw.trim() !== '') continue;
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[([^\]]*)\]/.exec(line);
    if (section !== null) {
      const name = (section[1] ?? '').trim();
      current = sections.get(name) ?? new Map<string, string>();
      sections.set(name, current);
      continue;
    }
    const eq = line.indexOf('=');
    if (current === undefined || eq === -1) continue;
    current.set(line.slice(0, eq).trim().toLowerCase(), line.slice(eq + 1).trim());
  }
  return sections;
}

const UNSUPPORTED_KEYS = ['role_arn', 'sso_session', 'sso_start_url', 'credential_process', 'web_identity_token_file'];

/**
 * The static credentials of `profile` in an INI text, `undefined` when the file has no such
 * profile, or a string saying what is wrong with the profile.
 */
export function profileCredentials(text: string, profile: string): AwsCredentials | undefined | string {
  const section = parseIni(text).get(profile);
  if (section === undefined) return undefined;
  const accessKeyId = section.get('aws_access_key_id') ?? '';
  const secretAccessKey = section.get('aws_secret_access_key') ?? '';
  if (accessKeyId === '' || secretAccessKey === '') {
    const other = UNSUPPORTED_KEYS.find((key) => section.has(key));
    return other === undefined
      ? `profile "${profile}" has no aws_access_key_id and aws_secret_access_key`
      : `profile "${profile}" uses ${other}, which llmux does not support (it reads static keys: aws_access_key_id, aws_secret_access_key, aws_session_token)`;
  }
  const sessionToken = section.get('aws_session_token');
  return { accessKeyId, secretAccessKey, ...(sessionToken === undefined || sessionToken === '' ? {} : { sessionToken }) };
}
