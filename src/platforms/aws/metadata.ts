/**
 * Temporary AWS credentials from the machine llmux runs on, as the AWS SDKs fetch them:
 *
 * - the container credentials endpoint (ECS task roles, EKS Pod Identity):
 *   `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` under http://169.254.170.2, else
 *   `AWS_CONTAINER_CREDENTIALS_FULL_URI` (https, or http to a loopback, ECS or EKS address only), with
 *   `Authorization` from `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` (read on every fetch: EKS rotates it)
 *   or `AWS_CONTAINER_AUTHORIZATION_TOKEN`. The AWS SDKs reference guide orders relative before full
 *   and the token file before the token; aws-sdk-js-v3's fromHttp differs, the guide is followed.
 * - the EC2 instance metadata service, IMDSv2 only: `PUT /latest/api/token` with
 *   `x-aws-ec2-metadata-token-ttl-seconds`, then the role name and its credentials with
 *   `x-aws-ec2-metadata-token`. `AWS_EC2_METADATA_SERVICE_ENDPOINT` overrides the address,
 *   `AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6` picks the IPv6 one. No fall back to IMDSv1.
 *
 * Failures throw {@link MetadataError} with a reason that never holds a credential, a token or the
 * container endpoint's path (which names the task's credentials).
 */
import type { FetchText } from '../../common/fetch-text.ts';
import type { AwsCredentials } from './sigv4.ts';

export type Env = Readonly<Record<string, string | undefined>>;

/** A credential endpoint failed; `message` is safe to show. */
export class MetadataError extends Error {
  override readonly name = 'MetadataError';
}

export interface MetadataIo {
  env: Env;
  fetchText: FetchText;
  readFile(path: string): Promise<string>;
  timeoutMs: number;
}

const CONTAINER_HOST = 'http://169.254.170.2';
const ALLOWED_HTTP_HOSTS = new Set(['169.254.170.2', '169.254.170.23', '[fd00:ec2::23]', 'localhost', '[::1]']);
const IMDS_IPV4 = 'http://169.254.169.254';
const IMDS_IPV6 = 'http://[fd00:ec2::254]';
const IMDS_TOKEN_TTL_SECONDS = '21600';
const IMDS_CREDENTIALS_PATH = '/latest/meta-data/iam/security-credentials/';

function set(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/** Whether the container endpoint settings are present (the chain's "found"). */
export function containerConfigured(env: Env): boolean {
  return set(env, 'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI') !== undefined || set(env, 'AWS_CONTAINER_CREDENTIALS_FULL_URI') !== undefined;
}

/** Whether IMDS may be asked (`AWS_EC2_METADATA_DISABLED=true` turns it off, as in the AWS SDKs). */
export function imdsEnabled(env: Env): boolean {
  return set(env, 'AWS_EC2_METADATA_DISABLED')?.toLowerCase() !== 'true';
}

/** The IMDS base URL llmux will use, for messages and `describe()`. */
export function imdsEndpoint(env: Env): string {
  const override = set(env, 'AWS_EC2_METADATA_SERVICE_ENDPOINT');
  if (override !== undefined) return override.replace(/\/+$/, '');
  return set(env, 'AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE')?.toLowerCase() === 'ipv6' ? IMDS_IPV6 : IMDS_IPV4;
}

function isLoopback(hostname: string): boolean {
  return ALLOWED_HTTP_HOSTS.has(hostname) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** The container endpoint URL and the name of the setting it came from. */
function containerUrl(env: Env): { url: string; setting: string; host: string } {
  const relative = set(env, 'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI');
  if (relative !== undefined) {
    return { url: `${CONTAINER_HOST}${relative.startsWith('/') ? '' : '/'}${relative}`, setting: 'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI', host: '169.254.170.2' };
  }
  const full = set(env, 'AWS_CONTAINER_CREDENTIALS_FULL_URI') ?? '';
  let parsed: URL;
  try {
    parsed = new URL(full);
  } catch {
    throw new MetadataError('AWS_CONTAINER_CREDENTIALS_FULL_URI is not a URL');
  }
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && isLoopback(parsed.hostname))) {
    throw new MetadataError(`AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, or http to a loopback, ECS (169.254.170.2) or EKS (169.254.170.23, fd00:ec2::23) address; it points at ${parsed.protocol}//${parsed.host}`);
  }
  return { url: parsed.href, setting: 'AWS_CONTAINER_CREDENTIALS_FULL_URI', host: parsed.host };
}

/** Where the container endpoint is, in words for `describe()` and errors (no path: it names the task's credentials). */
export function containerDescription(env: Env): string {
  try {
    const { setting, host } = containerUrl(env);
    return `the container credentials endpoint at ${host} (${setting})`;
  } catch {
    return 'the container credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI)';
  }
}

interface TemporaryCredentialsJson { AccessKeyId?: unknown; SecretAccessKey?: unknown; Token?: unknown; Expiration?: unknown; Code?: unknown }

/** `{AccessKeyId, SecretAccessKey, Token, Expiration}` as both endpoints answer them. */
function credentialsOf(body: string, where: string): AwsCredentials {
  let json: TemporaryCredentialsJson;
  try {
    json = JSON.parse(body) as TemporaryCredentialsJson;
  } catch {
    throw new MetadataError(`${where} answered with something that is not JSON`);
  }
  if (typeof json !== 'object' || json === null) throw new MetadataError(`${where} answered with something that is not a credentials object`);
  if (typeof json.Code === 'string' && json.Code !== 'Success') throw new MetadataError(`${where} answered Code "${json.Code.slice(0, 64)}"`);
  const { AccessKeyId, SecretAccessKey, Token, Expiration } = json;
  if (typeof AccessKeyId !== 'string' || typeof SecretAccessKey !== 'string' || typeof Token !== 'string' || typeof Expiration !== 'string') {
    throw new MetadataError(`${where} answered without AccessKeyId, SecretAccessKey, Token and Expiration`);
  }
  const expiresAtMs = Date.parse(Expiration);
  if (Number.isNaN(expiresAtMs)) throw new MetadataError(`${where} answered an Expiration that is not a date`);
  return { accessKeyId: AccessKeyId, secretAccessKey: SecretAccessKey, sessionToken: Token, expiresAtMs };
}

async function fetchOrFail(io: MetadataIo, where: string, request: Parameters<FetchText>[0]): Promise<string> {
  let response;
  try {
    response = await io.fetchText(request);
  } catch (err) {
    throw new MetadataError(`${where} did not answer (${err instanceof Error ? err.message : 'network error'})`);
  }
  if (response.status < 200 || response.status > 299) throw new MetadataError(`${where} answered HTTP ${response.status}`);
  return response.body;
}

/** Credentials from the container credentials endpoint. */
export async function containerCredentials(io: MetadataIo): Promise<AwsCredentials> {
  const { url } = containerUrl(io.env);
  const where = containerDescription(io.env);
  const headers: Record<string, string> = { accept: 'application/json' };
  const tokenFile = set(io.env, 'AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE');
  if (tokenFile !== undefined) {
    try {
      headers['authorization'] = (await io.readFile(tokenFile)).trim();
    } catch {
      throw new MetadataError(`the file AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE names (${tokenFile}) cannot be read`);
    }
  } else {
    const token = set(io.env, 'AWS_CONTAINER_AUTHORIZATION_TOKEN');
    if (token !== undefined) headers['authorization'] = token;
  }
  return credentialsOf(await fetchOrFail(io, where, { method: 'GET', url, headers, timeoutMs: io.timeoutMs }), where);
}

/** Credentials of the instance's role from IMDSv2. */
export async function instanceCredentials(io: MetadataIo): Promise<AwsCredentials> {
  const base = imdsEndpoint(io.env);
  const where = `the EC2 instance metadata service at ${base}`;
  const token = (await fetchOrFail(io, where, {
    method: 'PUT',
    url: `${base}/latest/api/token`,
    headers: { 'x-aws-ec2-metadata-token-ttl-seconds': IMDS_TOKEN_TTL_SECONDS },
    timeoutMs: io.timeoutMs,
  })).trim();
  const headers = { 'x-aws-ec2-metadata-token': token };
  const roles = await fetchOrFail(io, where, { method: 'GET', url: `${base}${IMDS_CREDENTIALS_PATH}`, headers, timeoutMs: io.timeoutMs });
  const role = roles.split('\n')[0]?.trim() ?? '';
  if (role === '') throw new MetadataError(`${where} lists no IAM role: attach an instance profile to the instance`);
  return credentialsOf(await fetchOrFail(io, where, { method: 'GET', url: `${base}${IMDS_CREDENTIALS_PATH}${encodeURIComponent(role)}`, headers, timeoutMs: io.timeoutMs }), where);
}
