import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createInputUnwrapper, customInput, localShellAction, toResponsesUsage } from '../../src/translate/responses-output.ts';

describe('customInput', () => {
  it('takes the input string of {"input": …} arguments, raw', () => {
    assert.equal(customInput(JSON.stringify({ input: '*** Begin Patch\n"quoted" \\ end' })), '*** Begin Patch\n"quoted" \\ end');
    assert.equal(customInput('{ "input" : "spaced" }'), 'spaced');
  });

  it('decodes what was written of the string when the arguments were cut short', () => {
    assert.equal(customInput('{"input": "line one\\nline tw'), 'line one\nline tw');
    assert.equal(customInput('{"input": "caf\\u00e9 \\'), 'café ');
  });

  it('takes a JSON string as the input, and keeps arguments of another shape as they are', () => {
    assert.equal(customInput('"just text"'), 'just text');
    assert.equal(customInput('{"patch": "x"}'), '{"patch": "x"}');
    assert.equal(customInput('*** Begin Patch'), '*** Begin Patch');
    assert.equal(customInput(''), '');
  });
});

describe('createInputUnwrapper', () => {
  const input = 'a "quote", a \\ backslash, a\ttab, é, \u{1F600}, \u2028 and </end>';
  const args = JSON.stringify({ input }).replace('\u{1F600}', '\\ud83d\\ude00').replace('é', '\\u00e9');

  it('streams the decoded input whatever way the arguments are cut, a split surrogate pair included', () => {
    for (let first = 0; first <= args.length; first++) {
      for (const second of [first, Math.min(args.length, first + 1), Math.min(args.length, first + 7)]) {
        const unwrapper = createInputUnwrapper();
        const decoded = unwrapper.push(args.slice(0, first)) + unwrapper.push(args.slice(first, second)) + unwrapper.push(args.slice(second));
        if (decoded !== input) assert.equal(decoded, input, `cut at ${first} and ${second}`);
      }
    }
  });

  it('never emits half a surrogate pair, and nothing after the closing quote', () => {
    const unwrapper = createInputUnwrapper();
    assert.equal(unwrapper.push('{"input":"x\\ud83d'), 'x');
    assert.equal(unwrapper.push('\\ude00"} trailing "junk"'), '\u{1F600}');
    assert.equal(unwrapper.push('more'), '');
  });

  it('streams nothing for arguments whose first key is not input', () => {
    const unwrapper = createInputUnwrapper();
    assert.equal(unwrapper.push('{"patch": "x", "input": "y"}'), '');
    assert.equal(unwrapper.inValue, false);
  });
});

describe('localShellAction', () => {
  it('builds the exec action from the arguments, keeping only string env values', () => {
    assert.deepEqual(localShellAction('{"command":["ls","-la"],"env":{"A":"1","B":2},"timeout_ms":500,"working_directory":"/w","user":"me"}'), {
      type: 'exec',
      command: ['ls', '-la'],
      env: { A: '1' },
      timeout_ms: 500,
      working_directory: '/w',
      user: 'me',
    });
  });

  it('reads a command given as one string, and cut-short arguments as an action without a command', () => {
    assert.deepEqual(localShellAction('{"command":"ls -la"}').command, ['ls -la']);
    assert.deepEqual(localShellAction('{"command":["l'), { type: 'exec', command: [], env: {} });
  });
});

describe('toResponsesUsage', () => {
  it('counts cached and cache-written tokens inside input_tokens once, and never more reasoning than output tokens', () => {
    assert.deepEqual(toResponsesUsage({ inputTokens: 3, outputTokens: 4, cacheReadTokens: 5, cacheCreationTokens: 6 }, 9), {
      input_tokens: 14,
      input_tokens_details: { cached_tokens: 5, cache_write_tokens: 6 },
      output_tokens: 4,
      output_tokens_details: { reasoning_tokens: 4 },
      total_tokens: 18,
    });
  });
});
