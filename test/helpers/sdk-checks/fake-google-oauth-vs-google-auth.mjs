// Checks test/helpers/fake-google-oauth.ts against Google's own client: google-auth-library gets a
// token with a generated service-account key (the fake verifies its RS256 assertion), with an
// authorized_user refresh token, and from the metadata server. Not run by the tests (the library is
// not a dependency of llmux). From a scratch folder:
//
//   npm init -y && npm i google-auth-library tsx
//   node --import tsx /path/to/llmux/test/helpers/sdk-checks/fake-google-oauth-vs-google-auth.mjs
//
// google-auth-library posts every assertion to https://oauth2.googleapis.com/token with that URL
// as its audience, whatever the key file's token_uri says; the fake is told to expect that audience
// and the library's requests are sent to it.
import { createRequire } from 'node:module';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const require = createRequire(join(process.cwd(), 'package.json'));
const { createServiceAccount, startFakeGoogleOAuth } = await import(new URL('../fake-google-oauth.ts', import.meta.url).href);

const account = createServiceAccount();
const user = { client_id: '764086051850-fake.apps.googleusercontent.com', client_secret: 'fake-client-secret', refresh_token: '1//0fake-refresh-token' };
const fake = await startFakeGoogleOAuth({ serviceAccounts: [account], users: [user], audience: 'https://oauth2.googleapis.com/token' });
process.env.GCE_METADATA_HOST = fake.metadataHost;
const { GoogleAuth, UserRefreshClient, Compute } = require('google-auth-library');
const failures = [];
const check = (what, ok) => { console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`); if (!ok) failures.push(what); };

const toFake = (input, init) => fetch(String(input instanceof Request ? input.url : input).replace('https://oauth2.googleapis.com', fake.url), init);
const keyPath = join(mkdtempSync(join(tmpdir(), 'llmux-sa-')), 'key.json');
writeFileSync(keyPath, JSON.stringify(account.keyFile('https://oauth2.googleapis.com/token')));

const auth = new GoogleAuth({ keyFile: keyPath, scopes: ['https://www.googleapis.com/auth/cloud-platform'], clientOptions: { transporterOptions: { fetchImplementation: toFake } } });
const sa = await (await auth.getClient()).getAccessToken();
check(`the fake accepts google-auth-library's service-account assertion (claims ${Object.keys(fake.assertions[0]?.claims ?? {}).join(', ')})`, fake.isIssued(sa.token ?? ''));
const refresh = new UserRefreshClient({ clientId: user.client_id, clientSecret: user.client_secret, refreshToken: user.refresh_token, transporterOptions: { fetchImplementation: toFake } });
check("the fake accepts google-auth-library's refresh grant", fake.isIssued((await refresh.getAccessToken()).token ?? ''));
check("google-auth-library's Compute client takes the fake metadata server's token", fake.isIssued((await new Compute().getAccessToken()).token ?? ''));
check('no request was refused', fake.refusals.length === 0);
await fake.close();
console.log(`google-auth-library ${require('google-auth-library/package.json').version}: ${failures.length === 0 ? 'all checks passed' : `${failures.length} failed`}`);
process.exitCode = failures.length === 0 ? 0 : 1;
