/**
 * A Vercel AI SDK agent recorded in Vigil: vigilMiddleware captures every model call of
 * generateText (each step of the tool loop: messages, tool calls, tokens, cost, latency) and
 * observeTools the tools the AI SDK runs, in the session that withSession makes ambient. Run it
 * against `npm start`:
 *
 *   VIGIL_API_KEY=<observe key> OPENAI_API_KEY=<key> node --import tsx examples/vercel-ai.ts
 *
 * OPENAI_BASE_URL points it at any OpenAI-compatible server instead; any AI SDK provider works.
 */
import { openai } from '@ai-sdk/openai';
import { generateText, stepCountIs, tool, wrapLanguageModel } from 'ai';
import { z } from 'zod';
import { ObserveClient } from '@vigil/sdk/node';
import { observeTools, vigilMiddleware } from '@vigil/sdk/ai';

const vigil = new ObserveClient(); // VIGIL_URL (default http://localhost:3400), VIGIL_API_KEY
const model = wrapLanguageModel({ model: openai.chat('gpt-4o-mini'), middleware: vigilMiddleware() });

const tools = observeTools({
  get_weather: tool({
    description: 'Current weather in a city',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, celsius: -3, sky: 'snow' }),
  }),
});

const answer = await vigil.withSession({ agentId: 'weather-agent', tags: ['example', 'vercel-ai'] }, async (session) => {
  console.log(`Session ${session.id} started`);
  const { text } = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: 'What is the weather in Oslo?' });
  return text;
});
console.log(`Answer: ${answer}`);
await vigil.close();
