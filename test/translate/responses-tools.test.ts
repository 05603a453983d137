import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResponsesRequest } from '../../src/formats/responses.ts';
import { flatToolName, prepareTools, restoreTool } from '../../src/translate/responses-tools.ts';
import { CODEX_TOOLS } from '../helpers/responses-stream.ts';

function prepare(tools: NonNullable<ResponsesRequest['tools']>, toolChoice?: ResponsesRequest['tool_choice']): { prepared: ReturnType<typeof prepareTools>; warnings: string[] } {
  const warnings: string[] = [];
  const request: ResponsesRequest = { model: 'm', tools };
  if (toolChoice !== undefined) request.tool_choice = toolChoice;
  return { prepared: prepareTools(request, (message) => warnings.push(message)), warnings };
}

describe('flatToolName', () => {
  it('joins namespace and tool with a double underscore', () => {
    assert.equal(flatToolName('github', 'create_issue'), 'github__create_issue');
  });

  it('cuts a name longer than 64 characters and ends it with a short stable hash, different per tool', () => {
    const long = flatToolName('mcp__a_very_long_server_name_for_testing', 'a_tool_with_a_rather_long_name_too');
    assert.equal(long.length, 64);
    assert.match(long, /^mcp__a_very_long_server_name_for_testing__a_tool_with_a_[0-9a-f]{8}$/);
    assert.equal(flatToolName('mcp__a_very_long_server_name_for_testing', 'a_tool_with_a_rather_long_name_too'), long);
    assert.notEqual(flatToolName('mcp__a_very_long_server_name_for_testing', 'a_tool_with_a_rather_long_name_two'), long);
  });

  it('replaces characters the providers refuse, and hashes so that the result stays unique', () => {
    const dotted = flatToolName('fs', 'read.file');
    assert.match(dotted, /^fs__read_file_[0-9a-f]{8}$/);
    assert.notEqual(dotted, flatToolName('fs', 'read_file'));
  });
});

describe('prepareTools', () => {
  it('turns Codex\'s tools into functions: custom with one string input and its grammar, namespaces flattened, local_shell with its action schema', () => {
    const { prepared, warnings } = prepare(CODEX_TOOLS);
    assert.deepEqual(prepared.tools.map((tool) => tool.name), ['shell', 'apply_patch', 'github__create_issue', 'local_shell']);
    const patch = prepared.tools[1];
    assert.deepEqual(patch?.parameters, { type: 'object', properties: { input: { type: 'string', description: 'The whole input for the tool, as raw text.' } }, required: ['input'], additionalProperties: false });
    assert.match(patch?.description ?? '', /^Edit files with a patch\.\n\nPut the whole input in the string parameter "input", written in this lark grammar:\nstart: begin_patch hunk\+ end_patch$/);
    assert.equal(prepared.tools[2]?.description, 'The GitHub MCP server.\n\nOpens an issue.');
    assert.deepEqual((prepared.tools[3]?.parameters as { required: string[] }).required, ['command']);
    assert.deepEqual(warnings, ['tools.4: "web_search" is a hosted or unknown tool this model\'s upstream cannot run; dropped']);
    assert.deepEqual([...prepared.toolNames.flattened], [['github__create_issue', { namespace: 'github', name: 'create_issue' }]]);
    assert.deepEqual([...prepared.toolNames.custom], ['apply_patch']);
    assert.equal(prepared.toolNames.localShell, true);
  });

  it('drops every hosted tool with a warning, never refusing the request', () => {
    const hosted = ['web_search', 'web_search_preview', 'file_search', 'code_interpreter', 'image_generation', 'computer_use', 'computer_use_preview', 'tool_search', 'mcp', 'shell', 'apply_patch', 'brand_new_tool'];
    const { prepared, warnings } = prepare(hosted.map((type) => ({ type })));
    assert.deepEqual(prepared.tools, []);
    assert.equal(warnings.length, hosted.length);
    assert.equal(prepared.choice, undefined);
  });

  it('gives a function without parameters an empty object schema, and keeps strict', () => {
    const { prepared } = prepare([{ type: 'function', name: 'ping', strict: true }]);
    assert.deepEqual(prepared.tools, [{ name: 'ping', parameters: { type: 'object', properties: {} }, strict: true }]);
  });

  it('maps tool_choice, finding a flattened tool by namespace and name or by a bare name that is unique', () => {
    assert.deepEqual(prepare(CODEX_TOOLS, 'required').prepared.choice, { mode: 'required' });
    assert.deepEqual(prepare(CODEX_TOOLS, { type: 'function', name: 'shell' }).prepared.choice, { mode: 'tool', name: 'shell' });
    assert.deepEqual(prepare(CODEX_TOOLS, { type: 'function', name: 'create_issue', namespace: 'github' }).prepared.choice, { mode: 'tool', name: 'github__create_issue' });
    assert.deepEqual(prepare(CODEX_TOOLS, { type: 'function', name: 'create_issue' }).prepared.choice, { mode: 'tool', name: 'github__create_issue' });
    assert.deepEqual(prepare(CODEX_TOOLS, { type: 'custom', name: 'apply_patch' }).prepared.choice, { mode: 'tool', name: 'apply_patch' });
  });

  it('drops a tool_choice naming no offered tool or a hosted one, with a warning; keeps allowed_tools\' mode', () => {
    const missing = prepare(CODEX_TOOLS, { type: 'function', name: 'nope' });
    assert.equal(missing.prepared.choice, undefined);
    assert.match(missing.warnings.at(-1) ?? '', /names no tool offered/);
    const hosted = prepare(CODEX_TOOLS, { type: 'web_search_preview' });
    assert.equal(hosted.prepared.choice, undefined);
    const allowed = prepare(CODEX_TOOLS, { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'shell' }] });
    assert.deepEqual(allowed.prepared.choice, { mode: 'required' });
    assert.match(allowed.warnings.at(-1) ?? '', /allowed_tools is not enforced/);
  });

  it('drops the second of two tools that come out with the same name', () => {
    const { prepared, warnings } = prepare([{ type: 'function', name: 'a__b' }, { type: 'namespace', name: 'a', tools: [{ type: 'function', name: 'b' }] }]);
    assert.deepEqual(prepared.tools.map((tool) => tool.name), ['a__b']);
    assert.equal(prepared.toolNames.flattened.size, 0);
    assert.match(warnings[0] ?? '', /^tools\.1\.tools\.0: another tool is already offered as "a__b"; dropped$/);
  });
});

describe('restoreTool', () => {
  it('gives back the kind, name and namespace the client declared', () => {
    const { toolNames } = prepare(CODEX_TOOLS).prepared;
    assert.deepEqual(restoreTool('github__create_issue', toolNames), { kind: 'function', name: 'create_issue', namespace: 'github' });
    assert.deepEqual(restoreTool('apply_patch', toolNames), { kind: 'custom', name: 'apply_patch' });
    assert.deepEqual(restoreTool('local_shell', toolNames), { kind: 'local_shell', name: 'local_shell' });
    assert.deepEqual(restoreTool('unknown', toolNames), { kind: 'function', name: 'unknown' });
  });
});

describe('prepareTools with Codex\'s additional_tools input item ("responses lite")', () => {
  const additional: ResponsesRequest = {
    model: 'm',
    tools: [{ type: 'function', name: 'top_level', parameters: { type: 'object', properties: {} } }],
    input: [
      { type: 'additional_tools', role: 'developer', tools: [
        { type: 'namespace', name: 'functions', description: '', tools: [{ type: 'custom', name: 'exec', description: 'Run JavaScript' }, { type: 'function', name: 'wait', parameters: { type: 'object', properties: { ms: { type: 'integer' } } } }] },
        { type: 'web_search' },
      ] },
      { role: 'user', content: 'hi' },
    ],
  };

  it('offers its tools after the request\'s own, namespaces flattened and custom tools restorable', () => {
    const warnings: string[] = [];
    const prepared = prepareTools(additional, (message) => warnings.push(message));
    assert.deepEqual(prepared.tools.map((tool) => tool.name), ['top_level', 'functions__exec', 'functions__wait']);
    assert.deepEqual(restoreTool('functions__exec', prepared.toolNames), { kind: 'custom', name: 'exec', namespace: 'functions' });
    assert.deepEqual(warnings, ['input.0.tools.1: "web_search" is a hosted or unknown tool this model\'s upstream cannot run; dropped']);
  });
});
