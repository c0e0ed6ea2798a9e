/**
 * An Anthropic agent recorded in Vigil: observeAnthropic captures every messages.create call
 * (system prompt, tool use, tokens, cost, latency) and traceTool the agent's own tool, in the
 * session that withSession makes ambient. Run it against `npm start`:
 *
 *   VIGIL_API_KEY=<observe key> ANTHROPIC_API_KEY=<key> node --import tsx examples/anthropic.ts
 *
 * ANTHROPIC_BASE_URL points it at any Anthropic-compatible server instead.
 */
import Anthropic from '@anthropic-ai/sdk';
import { ObserveClient, traceTool } from '@vigil/sdk/node';
import { observeAnthropic } from '@vigil/sdk/anthropic';

const vigil = new ObserveClient(); // VIGIL_URL (default http://localhost:3400), VIGIL_API_KEY
const anthropic = observeAnthropic(new Anthropic()); // ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL

const getWeather = traceTool('get_weather', async ({ city }: { city: string }) => ({ city, celsius: -3, sky: 'snow' }));

const tools: Anthropic.Tool[] = [
  {
    name: 'get_weather',
    description: 'Current weather in a city',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

const answer = await vigil.withSession({ agentId: 'weather-agent', tags: ['example', 'anthropic'] }, async (session) => {
  console.log(`Session ${session.id} started`);
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is the weather in Oslo?' }];
  for (let turn = 0; turn < 5; turn++) {
    const reply = await anthropic.messages.create({ model: 'claude-haiku-4-5', max_tokens: 1024, system: 'You are a weather assistant.', messages, tools });
    messages.push({ role: 'assistant', content: reply.content });
    const uses = reply.content.filter((block) => block.type === 'tool_use');
    if (uses.length === 0) return reply.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
    const results: Anthropic.ToolResultBlockParam[] = [];
    for (const use of uses) {
      results.push({ type: 'tool_result', tool_use_id: use.id, content: JSON.stringify(await getWeather(use.input as { city: string })) });
    }
    messages.push({ role: 'user', content: results });
  }
  throw new Error('no answer after 5 turns');
});
console.log(`Answer: ${answer}`);
await vigil.close();
