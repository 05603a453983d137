import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bedrockErrorOf, bedrockMessageOf, exceptionName, exceptionStatus } from '../../../src/platforms/aws/bedrock-errors.ts';

test('the x-amzn-errortype header and a frame type name the same exception', () => {
  assert.equal(exceptionName('ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/'), 'ThrottlingException');
  assert.equal(exceptionName('throttlingException'), 'ThrottlingException');
  assert.equal(exceptionStatus('modelStreamErrorException'), 424);
  assert.equal(exceptionStatus('NoSuchThing', 502), 502);
});

test("a whole-answer error keeps the status Bedrock answered with and reads message or Message", () => {
  assert.deepEqual(bedrockErrorOf('ValidationException:http://x', 400, bedrockMessageOf('{"message":"max_tokens: too big"}')), {
    type: 'ValidationException', status: 400, message: 'max_tokens: too big', retryable: false,
  });
  assert.deepEqual(bedrockErrorOf(undefined, 403, bedrockMessageOf('{"Message":"The security token included in the request is invalid."}')), {
    type: 'UnknownError', status: 403, message: 'The security token included in the request is invalid.', retryable: false,
  });
  assert.equal(bedrockErrorOf('ThrottlingException', 429, '').retryable, true);
  assert.equal(bedrockErrorOf(undefined, 503, '').retryable, true);
});

test('an error body that is not JSON is quoted, shortened', () => {
  assert.equal(bedrockMessageOf('<html>bad gateway</html>'), '<html>bad gateway</html>');
  assert.equal(bedrockMessageOf('x'.repeat(5000)).length, 2000);
  assert.equal(bedrockMessageOf('{"message": 5}'), '{"message": 5}');
});
