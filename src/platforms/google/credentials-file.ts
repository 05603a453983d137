/**
 * Which Google credentials a Vertex provider uses, as Application Default Credentials find them:
 * the provider's `credentials_file`, else the file `GOOGLE_APPLICATION_CREDENTIALS` names, else
 * gcloud's own (`gcloud auth application-default login` writes it under `CLOUDSDK_CONFIG` or
 * ~/.config/gcloud), else the metadata server of the machine llmux runs on. A file is a
 * `service_account` key or an `authorized_user` refresh token; other kinds (external accounts,
 * impersonation) are refused by name.
 *
 * A file that is named but cannot be read or parsed is an error: never a reason to go on to the
 * next source. Errors never quote the file (JSON.parse's messages do, so they are not passed on).
 */
import { join } from 'node:path';

export type Env = Readonly<Record<string, string | undefined>>;

export interface ServiceAccountFile {
  type: 'service_account';
  clientEmail: string;
  privateKeyPem: string;
  privateKeyId: string | undefined;
  tokenUri: string;
}

export interface AuthorizedUserFile {
  type: 'authorized_user';
  clientId: string;
  clientSecret: string;
  refreshToken: string;
  quotaProjectId: string | undefined;
}

/** Where credentials come from: a parsed file and the setting that named it, or the metadata server. */
export type GoogleCredentialSource =
  | { kind: 'file'; file: ServiceAccountFile | AuthorizedUserFile; path: string; setting: string }
  | { kind: 'metadata'; host: string };

/** A source that is named but unusable: what is wrong and the setting to check. */
export class CredentialsFileError extends Error {
  override readonly name = 'CredentialsFileError';
  constructor(message: string, readonly setting: string) {
    super(message);
  }
}

export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
const DEFAULT_METADATA_HOST = 'metadata.google.internal';

function present(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== '';
}

function field(json: Record<string, unknown>, name: string): string | undefined {
  const value = json[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** A credentials file's text as one of the kinds llmux uses. */
export function parseCredentialsFile(text: string, path: string, setting: string): ServiceAccountFile | AuthorizedUserFile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CredentialsFileError(`${path} is not JSON`, setting);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new CredentialsFileError(`${path} is not a credentials object`, setting);
  const record = json as Record<string, unknown>;
  const type = field(record, 'type');
  if (type === 'service_account') {
    const clientEmail = field(record, 'client_email');
    const privateKeyPem = field(record, 'private_key');
    if (clientEmail === undefined || privateKeyPem === undefined) throw new CredentialsFileError(`the service account file ${path} has no client_email or private_key`, setting);
    return { type, clientEmail, privateKeyPem, privateKeyId: field(record, 'private_key_id'), tokenUri: field(record, 'token_uri') ?? GOOGLE_TOKEN_URL };
  }
  if (type === 'authorized_user') {
    const clientId = field(record, 'client_id');
    const clientSecret = field(record, 'client_secret');
    const refreshToken = field(record, 'refresh_token');
    if (clientId === undefined || clientSecret === undefined || refreshToken === undefined) {
      throw new CredentialsFileError(`the authorized_user file ${path} has no client_id, client_secret or refresh_token`, setting);
    }
    return { type, clientId, clientSecret, refreshToken, quotaProjectId: field(record, 'quota_project_id') };
  }
  throw new CredentialsFileError(
    `${path} holds credentials of type ${type === undefined ? '(none)' : `"${type.slice(0, 64)}"`}; llmux reads service_account and authorized_user files`,
    setting,
  );
}

export interface LocateOptions {
  providerId: string;
  credentialsFile: string | undefined;
  env: Env;
  homeDir: string;
  readFile(path: string): Promise<string>;
}

/** gcloud's application default credentials file. */
function gcloudFile(env: Env, homeDir: string): string {
  const config = env['CLOUDSDK_CONFIG'];
  if (present(config)) return join(config, 'application_default_credentials.json');
  const appData = env['APPDATA'];
  if (process.platform === 'win32' && present(appData)) return join(appData, 'gcloud', 'application_default_credentials.json');
  return join(homeDir, '.config', 'gcloud', 'application_default_credentials.json');
}

async function readNamed(options: LocateOptions, path: string, setting: string): Promise<GoogleCredentialSource> {
  let text: string;
  try {
    text = await options.readFile(path);
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    throw new CredentialsFileError(`the credentials file ${path} ${missing ? 'does not exist' : 'cannot be read'}`, setting);
  }
  return { kind: 'file', file: parseCredentialsFile(text, path, setting), path, setting };
}

/** The metadata server's host (`GCE_METADATA_HOST`, which may carry a port). */
export function metadataHost(env: Env): string {
  return present(env['GCE_METADATA_HOST']) ? (env['GCE_METADATA_HOST'] as string).trim() : DEFAULT_METADATA_HOST;
}

/** The first source found, in Application Default Credentials' order. */
export async function locateCredentials(options: LocateOptions): Promise<GoogleCredentialSource> {
  const { env } = options;
  if (present(options.credentialsFile)) {
    return readNamed(options, options.credentialsFile, `providers.${options.providerId}.credentials_file`);
  }
  const fromEnv = env['GOOGLE_APPLICATION_CREDENTIALS'];
  if (present(fromEnv)) return readNamed(options, fromEnv, 'GOOGLE_APPLICATION_CREDENTIALS');
  const gcloud = gcloudFile(env, options.homeDir);
  let text: string | undefined;
  try {
    text = await options.readFile(gcloud);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new CredentialsFileError(`gcloud's credentials file ${gcloud} cannot be read`, 'gcloud auth application-default login');
    }
  }
  if (text !== undefined) {
    return { kind: 'file', file: parseCredentialsFile(text, gcloud, 'gcloud auth application-default login'), path: gcloud, setting: 'gcloud auth application-default login' };
  }
  return { kind: 'metadata', host: metadataHost(env) };
}
