/**
 * A LangChain.js agent recorded in Vigil: VigilCallbackHandler records the chat model runs
 * (messages, tool calls, tokens, cost, latency), the tool runs and the chain runs around them, in
 * the session that withSession makes ambient. Run it against `npm start`:
 *
 *   VIGIL_API_KEY=<observe key> OPENAI_API_KEY=<key> node --import tsx examples/langchain.ts
 *
 * OPENAI_BASE_URL points it at any OpenAI-compatible server instead; any LangChain chat model works.
 */
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { ObserveClient } from '@vigil/sdk/node';
import { VigilCallbackHandler } from '@vigil/sdk/langchain';

const vigil = new ObserveClient(); // VIGIL_URL (default http://localhost:3400), VIGIL_API_KEY

const getWeather = tool(async ({ city }) => JSON.stringify({ city, celsius: -3, sky: 'snow' }), {
  name: 'get_weather',
  description: 'Current weather in a city',
  schema: z.object({ city: z.string() }),
});
const model = new ChatOpenAI({ model: 'gpt-4o-mini' }).bindTools([getWeather]); // OPENAI_API_KEY, OPENAI_BASE_URL

const answer = await vigil.withSession({ agentId: 'weather-agent', tags: ['example', 'langchain'] }, async (session) => {
  console.log(`Session ${session.id} started`);
  const callbacks = [new VigilCallbackHandler()];
  const messages: BaseMessage[] = [new HumanMessage('What is the weather in Oslo?')];
  for (let turn = 0; turn < 5; turn++) {
    const reply = await model.invoke(messages, { callbacks });
    messages.push(reply);
    if (!reply.tool_calls?.length) return String(reply.content);
    for (const call of reply.tool_calls) messages.push(await getWeather.invoke(call, { callbacks }));
  }
  throw new Error('no answer after 5 turns');
});
console.log(`Answer: ${answer}`);
await vigil.close();
