/**
 * Where a Bedrock provider's AWS credentials come from: the first source found, in the order
 * llmux.md section 8 fixes —
 *
 * 1. the provider's `credentials` (`access_key_id`, `secret_access_key`, `session_token`, each a
 *    literal or `env:NAME`);
 * 2. the provider's `profile` in the shared credentials file;
 * 3. the `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN` variables
 *    (`AWS_CREDENTIAL_EXPIRATION` too, as the AWS SDKs read it);
 * 4. `AWS_PROFILE`, else `default`, in the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`,
 *    else ~/.aws/credentials);
 * 5. the container credentials endpoint, when its variables are set;
 * 6. the EC2 instance metadata service (IMDSv2), unless `AWS_EC2_METADATA_DISABLED=true`.
 *
 * A source that is configured but broken (a named variable unset, a profile missing from the file,
 * an endpoint refusing) is an error, not a reason to try the next one: falling through would sign
 * with credentials the operator did not mean. Nothing found at all is an error listing every source
 * and why it did not apply. Errors are 502 `upstream_auth_failed` naming the setting to check and
 * never a key, secret or token.
 *
 * Temporary credentials are refreshed `refreshMarginMs` (5 minutes, as aws-sdk-js-v3's
 * credential-provider-node) before they expire, one refresh at a time however many requests wait
 * (../../common/refreshed-value.ts); if that refresh fails, the old credentials serve until they
 * expire.
 */
import { homedir } from 'node:os';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { platformAuthFailed } from '../../common/errors.ts';
import { fetchText as realFetchText } from '../../common/fetch-text.ts';
import { createRefreshedValue } from '../../common/refreshed-value.ts';
import type { FetchText } from '../../common/fetch-text.ts';
import type { AwsCredentials } from './sigv4.ts';
import { profileCredentials } from './shared-file.ts';
import {
  MetadataError, containerConfigured, containerCredentials, containerDescription, imdsEnabled, imdsEndpoint, instanceCredentials,
} from './metadata.ts';
import type { Env, MetadataIo } from './metadata.ts';

/** A Bedrock provider's credential settings as written in the config. */
export interface AwsCredentialSettings {
  /** `providers.<id>.credentials`: each field a literal or `env:NAME`. */
  credentials?: { access_key_id?: string; secret_access_key?: string; session_token?: string } | undefined;
  /** `providers.<id>.profile`: a profile in the shared credentials file. */
  profile?: string | undefined;
}

export interface AwsCredentialChainOptions extends AwsCredentialSettings {
  /** The provider's id, for messages (`providers.<id>.credentials`). */
  providerId: string;
  env?: Env;
  homeDir?: string;
  readFile?: (path: string) => Promise<string>;
  fetchText?: FetchText;
  now?: () => number;
  /** Temporary credentials are refreshed this long before they expire; default 5 minutes. */
  refreshMarginMs?: number;
  /** Deadline of each container or instance metadata request; default 1000 ms, the AWS SDKs'. */
  timeoutMs?: number;
}

export type AwsCredentialSource = 'config' | 'profile' | 'environment' | 'shared-file' | 'container' | 'instance-metadata';

/** Where credentials came from, in words without any value. */
export interface AwsCredentialOrigin {
  source: AwsCredentialSource;
  /** For `llmux doctor`: `the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY variables`, `profile "dev" in /home/u/.aws/credentials`, … */
  detail: string;
  /** When temporary credentials expire (epoch ms). */
  expiresAtMs?: number;
}

export type AwsCredentialDescription = ({ ok: true } & AwsCredentialOrigin) | { ok: false; reason: string };

export interface AwsCredentialChain {
  /** Credentials good for at least the refresh margin; throws 502 `upstream_auth_failed` when none can be had. */
  get(): Promise<AwsCredentials>;
  /** Where the credentials come from, or why there are none; resolves them if need be, never throws. */
  describe(): Promise<AwsCredentialDescription>;
  /** The secret values in play now (secret access key and session token, the last two of each), for a redactor that must keep them out of answers and logs. */
  secrets(): string[];
}

const DEFAULT_REFRESH_MARGIN_MS = 5 * 60 * 1000;
const DEFAULT_TIMEOUT_MS = 1000;
const ENV_PREFIX = 'env:';

interface Resolved { credentials: AwsCredentials; origin: AwsCredentialOrigin }

/** A configured source that cannot give credentials: what is wrong, and the setting to check. */
class SourceError extends Error {
  constructor(message: string, readonly setting: string) {
    super(message);
  }
}

function present(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== '';
}

/** Creates the credential chain for one Bedrock provider. */
export function createAwsCredentialChain(options: AwsCredentialChainOptions): AwsCredentialChain {
  const env = options.env ?? process.env;
  const now = options.now ?? Date.now;
  const read = options.readFile ?? ((path: string) => readFile(path, 'utf8'));
  const refreshMarginMs = options.refreshMarginMs ?? DEFAULT_REFRESH_MARGIN_MS;
  const io: MetadataIo = { env, fetchText: options.fetchText ?? realFetchText, readFile: read, timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS };
  const at = `providers.${options.providerId}`;

  const sharedFile = (): string => {
    const configured = env['AWS_SHARED_CREDENTIALS_FILE'];
    const home = options.homeDir ?? homedir();
    if (!present(configured)) return join(home, '.aws', 'credentials');
    return configured.startsWith('~/') ? join(home, configured.slice(2)) : configured;
  };

  /** The shared file's text, or undefined when it does not exist. */
  const readShared = async (path: string, setting: string): Promise<string | undefined> => {
    try {
      return await read(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new SourceError(`the shared credentials file ${path} cannot be read`, `${setting} and ${path}`);
    }
  };

  const fromConfig = (written: NonNullable<AwsCredentialSettings['credentials']>): Resolved => {
    /** A field's value, its `env:NAME` resolved; undefined when it is not written. */
    const field = (name: 'access_key_id' | 'secret_access_key' | 'session_token'): string | undefined => {
      const value = written[name];
      if (!present(value)) return undefined;
      if (!value.startsWith(ENV_PREFIX)) return value;
      const variable = value.slice(ENV_PREFIX.length);
      const resolved = env[variable];
      if (!present(resolved)) throw new SourceError(`${at}.credentials.${name} names the environment variable ${variable}, which is not set`, `the environment variable ${variable}`);
      return resolved;
    };
    const accessKeyId = field('access_key_id');
    const secretAccessKey = field('secret_access_key');
    const sessionToken = field('session_token');
    for (const [name, value] of [['access_key_id', accessKeyId], ['secret_access_key', secretAccessKey]] as const) {
      if (value === undefined) throw new SourceError(`${at}.credentials.${name} is not set`, `${at}.credentials.${name}`);
    }
    return {
      credentials: { accessKeyId: accessKeyId as string, secretAccessKey: secretAccessKey as string, ...(sessionToken === undefined ? {} : { sessionToken }) },
      origin: { source: 'config', detail: `${at}.credentials in the llmux config` },
    };
  };

  /** A profile's credentials; a missing profile is an error unless `optional` (the default profile nobody named). */
  const fromProfile = async (profile: string, setting: string, source: 'profile' | 'shared-file', optional: boolean): Promise<Resolved | undefined> => {
    const path = sharedFile();
    const text = await readShared(path, setting);
    const found = text === undefined ? undefined : profileCredentials(text, profile);
    if (typeof found === 'string') throw new SourceError(`${found} in ${path}`, `${setting} and ${path}`);
    if (found === undefined) {
      if (optional) return undefined;
      throw new SourceError(`${text === undefined ? `there is no shared credentials file ${path}` : `${path} has no profile "${profile}"`}`, `${setting} and ${path}`);
    }
    return { credentials: found, origin: { source, detail: `profile "${profile}" in ${path}` } };
  };

  const fromEnvironment = (): Resolved | undefined => {
    const accessKeyId = env['AWS_ACCESS_KEY_ID'];
    const secretAccessKey = env['AWS_SECRET_ACCESS_KEY'];
    if (!present(accessKeyId) && !present(secretAccessKey)) return undefined;
    if (!present(accessKeyId) || !present(secretAccessKey)) {
      const [given, missing] = present(accessKeyId) ? ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] : ['AWS_SECRET_ACCESS_KEY', 'AWS_ACCESS_KEY_ID'];
      throw new SourceError(`${given} is set but ${missing} is not`, 'the AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY environment variables');
    }
    const sessionToken = env['AWS_SESSION_TOKEN'];
    const expiration = env['AWS_CREDENTIAL_EXPIRATION'];
    const expiresAtMs = present(expiration) ? Date.parse(expiration) : undefined;
    return {
      credentials: {
        accessKeyId,
        secretAccessKey,
        ...(present(sessionToken) ? { sessionToken } : {}),
        ...(expiresAtMs === undefined || Number.isNaN(expiresAtMs) ? {} : { expiresAtMs }),
      },
      origin: { source: 'environment', detail: `the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY${present(sessionToken) ? ' / AWS_SESSION_TOKEN' : ''} variables` },
    };
  };

  const fromMetadata = async (source: 'container' | 'instance-metadata'): Promise<Resolved> => {
    const detail = source === 'container' ? containerDescription(env) : `the EC2 instance metadata service (IMDSv2) at ${imdsEndpoint(env)}`;
    const setting = source === 'container'
      ? 'the AWS_CONTAINER_CREDENTIALS_* and AWS_CONTAINER_AUTHORIZATION_TOKEN* variables and the task or pod role'
      : "the instance's IAM role (instance profile), and AWS_EC2_METADATA_SERVICE_ENDPOINT if set";
    try {
      const credentials = source === 'container' ? await containerCredentials(io) : await instanceCredentials(io);
      return { credentials, origin: { source, detail, ...(credentials.expiresAtMs === undefined ? {} : { expiresAtMs: credentials.expiresAtMs }) } };
    } catch (err) {
      if (err instanceof MetadataError) throw new SourceError(err.message, setting);
      throw err;
    }
  };

  /** The first source found, in the contract's order. */
  const resolve = async (): Promise<Resolved> => {
    const skipped: string[] = [];
    if (options.credentials !== undefined) return fromConfig(options.credentials);
    if (present(options.profile)) return (await fromProfile(options.profile, `${at}.profile`, 'profile', false)) as Resolved;
    const fromEnv = fromEnvironment();
    if (fromEnv !== undefined) return fromEnv;
    skipped.push('AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY are not set');
    const profile = env['AWS_PROFILE'];
    const shared = present(profile)
      ? await fromProfile(profile.trim(), 'AWS_PROFILE', 'shared-file', false)
      : await fromProfile('default', 'AWS_PROFILE (unset: the default profile)', 'shared-file', true);
    if (shared !== undefined) return shared;
    skipped.push(`no "default" profile in ${sharedFile()}`);
    if (containerConfigured(env)) return fromMetadata('container');
    skipped.push('no container credentials endpoint is set');
    if (!imdsEnabled(env)) {
      skipped.push('the instance metadata service is turned off (AWS_EC2_METADATA_DISABLED)');
      throw new SourceError(`no AWS credentials found (${skipped.join('; ')})`, `${at}.credentials, ${at}.profile or the AWS_* environment variables`);
    }
    try {
      return await fromMetadata('instance-metadata');
    } catch (err) {
      if (!(err instanceof SourceError)) throw err;
      skipped.push(err.message);
      throw new SourceError(`no AWS credentials found (${skipped.join('; ')})`, `${at}.credentials, ${at}.profile, the AWS_* environment variables, or the instance's IAM role`);
    }
  };

  const held = createRefreshedValue<Resolved>({
    load: resolve,
    isFresh: (value) => value.credentials.expiresAtMs === undefined || value.credentials.expiresAtMs - now() > refreshMarginMs,
    isUsable: (value) => value.credentials.expiresAtMs === undefined || value.credentials.expiresAtMs > now(),
  });

  let recent: AwsCredentials[] = [];
  const obtain = async (): Promise<Resolved> => {
    try {
      const resolved = await held.get();
      if (recent[0] !== resolved.credentials) recent = [resolved.credentials, ...recent.slice(0, 1)];
      return resolved;
    } catch (err) {
      if (err instanceof SourceError) throw platformAuthFailed(options.providerId, err.message, err.setting);
      throw platformAuthFailed(options.providerId, 'resolving AWS credentials failed unexpectedly', `${at} and the AWS_* environment variables`);
    }
  };

  return {
    secrets() {
      return recent.flatMap((c) => [c.secretAccessKey, c.sessionToken ?? '']).filter((value) => value !== '');
    },
    async get() {
      return (await obtain()).credentials;
    },
    async describe() {
      try {
        return { ok: true, ...(await obtain()).origin };
      } catch (err) {
        return { ok: false, reason: err instanceof Error ? err.message : String(err) };
      }
    },
  };
}
