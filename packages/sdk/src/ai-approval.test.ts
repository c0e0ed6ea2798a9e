// @vigil/sdk/ai-approval with ai 6 (its `needsApproval` hook), the real package and @ai-sdk/openai against a fake OpenAI server.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { aiApprovalCases, type AiKit } from './ai-approval-harness.ts';

aiApprovalCases({
  label: 'ai 6',
  hook: 'needsApproval',
  tool: tool as AiKit['tool'],
  jsonSchema: jsonSchema as AiKit['jsonSchema'],
  stepCountIs,
  generateText: generateText as unknown as AiKit['generateText'],
  chatModel: (baseURL) => createOpenAI({ baseURL, apiKey: 'sk-test' }).chat('gpt-4o-mini'),
});
