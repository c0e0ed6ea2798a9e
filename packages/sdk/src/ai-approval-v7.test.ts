// @vigil/sdk/ai-approval with ai 7 (its `toolApproval` option), the real package and @ai-sdk/openai 4 against a fake OpenAI server.
// ai 7 needs Node >= 22: on older Node this file says so and runs nothing (CI runs the suite on Node 24 too).
import { test } from 'node:test';
import { aiApprovalCases, type AiKit } from './ai-approval-harness.ts';

const nodeMajor = Number(process.versions.node.split('.')[0]);

if (nodeMajor < 22) {
  test('ai 7 tool approval backed by the gate', { skip: `ai 7 needs Node >= 22; this is Node ${process.versions.node}` }, () => {});
} else {
  const { generateText, jsonSchema, stepCountIs, tool } = await import('ai-v7');
  const { createOpenAI } = await import('@ai-sdk/openai-v4');
  aiApprovalCases({
    label: 'ai 7',
    hook: 'toolApproval',
    tool: tool as AiKit['tool'],
    jsonSchema: jsonSchema as AiKit['jsonSchema'],
    stepCountIs,
    generateText: generateText as unknown as AiKit['generateText'],
    chatModel: (baseURL) => createOpenAI({ baseURL, apiKey: 'sk-test' }).chat('gpt-4o-mini'),
  });
}
