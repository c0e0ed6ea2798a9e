/**
 * An OpenAI agent recorded in Vigil: observeOpenAI captures every chat completion (messages,
 * tool calls, tokens, cost, latency) and traceTool the agent's own tool, in the session that
 * withSession makes ambient. Run it against `npm start`:
 *
 *   VIGIL_API_KEY=<observe key> OPENAI_API_KEY=<key> node --import tsx examples/openai.ts
 *
 * OPENAI_BASE_URL points it at any OpenAI-compatible server instead.
 */
import OpenAI from 'openai';
import { ObserveClient, traceTool } from '@vigil/sdk/node';
import { observeOpenAI } from '@vigil/sdk/openai';

const vigil = new ObserveClient(); // VIGIL_URL (default http://localhost:3400), VIGIL_API_KEY
const openai = observeOpenAI(new OpenAI()); // OPENAI_API_KEY, OPENAI_BASE_URL

const getWeather = traceTool('get_weather', async ({ city }: { city: string }) => ({ city, celsius: -3, sky: 'snow' }));

const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];

const answer = await vigil.withSession({ agentId: 'weather-agent', tags: ['example', 'openai'] }, async (session) => {
  console.log(`Session ${session.id} started`);
  const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Oslo?' }];
  for (let turn = 0; turn < 5; turn++) {
    const completion = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages, tools });
    const message = completion.choices[0]!.message;
    messages.push(message);
    if (!message.tool_calls?.length) return message.content ?? '';
    for (const call of message.tool_calls) {
      if (call.type !== 'function') continue;
      const result = await getWeather(JSON.parse(call.function.arguments) as { city: string });
      messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) });
    }
  }
  throw new Error('no answer after 5 turns');
});
console.log(`Answer: ${answer}`);
await vigil.close();
