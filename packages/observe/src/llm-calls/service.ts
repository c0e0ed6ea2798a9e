import { roundUsd, type PriceTable } from '@vigil/pricing';
import { markedErasure } from '../events/index.ts';
import type { ObserveContext } from '../context.ts';
import type { LlmCall, LlmCallDetail } from './schemas.ts';
import { findLlmCall, findLlmRequest, toLlmCall } from './store.ts';

type Content = { state: 'readable'; payload: Record<string, unknown> } | { state: 'erased'; erasureId: string } | { state: 'sealed' };

/**
 * An event's content as the reader may see it: erased (the marker, content gone), sealed (its data
 * key destroyed: the sealer left it as stored) or readable.
 */
function contentOf(payloadJson: string, metadataJson: string): Content {
  const erasureId = markedErasure(payloadJson, metadataJson);
  if (erasureId !== null) return { state: 'erased', erasureId };
  const payload = JSON.parse(payloadJson) as Record<string, unknown>;
  if (typeof payload.$sealed === 'string') return { state: 'sealed' };
  return { state: 'readable', payload };
}

function priceOf(prices: PriceTable, call: LlmCall): LlmCallDetail['price'] {
  if (call.model === null) return null;
  const price = prices.find(call.model, call.provider ?? undefined) ?? prices.find(call.model);
  if (!price) return null;
  const costAtPriceUsd = roundUsd(((call.inputTokens ?? 0) * price.inputPerMillionUsd + (call.outputTokens ?? 0) * price.outputPerMillionUsd) / 1_000_000);
  return { ...price, costAtPriceUsd };
}

/** One LLM call with its prompt (the matching llm_call event), completion and the price table's entry; undefined when there is no such llm_response. */
export async function llmCallDetail(
  { database, sealer, prices }: Pick<ObserveContext, 'database' | 'sealer' | 'prices'>,
  id: string,
): Promise<LlmCallDetail | undefined> {
  const { db } = database;
  const stored = await findLlmCall(db, id);
  if (!stored) return undefined;
  const request =
    stored.call_id === null ? undefined : await findLlmRequest(db, { session_id: stored.session_id, call_id: stored.call_id, ts: Number(stored.ts) });
  const [response, asked] = await sealer.open(request ? [stored, request] : [stored]);
  const call = toLlmCall(stored);
  const content = contentOf(response!.payload, response!.metadata);
  const askedContent = asked ? contentOf(asked.payload, asked.metadata) : undefined;
  const readable = content.state === 'readable' ? content.payload : undefined;
  return {
    ...call,
    content: content.state,
    erasureId: content.state === 'erased' ? content.erasureId : null,
    callId: stored.call_id,
    promptContent: askedContent?.state ?? 'missing',
    prompt:
      asked && askedContent?.state === 'readable'
        ? {
            eventId: asked.id,
            systemPrompt: typeof askedContent.payload.systemPrompt === 'string' ? askedContent.payload.systemPrompt : null,
            messages: Array.isArray(askedContent.payload.messages) ? askedContent.payload.messages : [],
          }
        : null,
    completion: readable?.completion ?? null,
    toolCalls: Array.isArray(readable?.toolCalls) ? readable.toolCalls : [],
    price: priceOf(prices, call),
  };
}
