import { useCallback, useEffect, useEffectEvent, useLayoutEffect, useRef } from 'react';
import { observe, type Session, type VigilEvent } from './api.ts';

export interface LiveHandlers {
  onEvent?: (event: VigilEvent) => void;
  onSession?: (session: Session) => void;
  /**
   * The stream started without continuing from an earlier id (first connection, or one the server
   * could not resume): load the current state from the API, so nothing before the start is missed.
   */
  onReset?: () => void;
}

/** How long to wait before reopening a stream the browser gave up on (401 after the token expired, a restart). */
const REOPEN_MS = 3000;

/**
 * Observe's live stream (GET /api/stream) through EventSource, while `enabled`. EventSource cannot
 * send the API key, so each connection first fetches a short-lived stream token. The browser
 * reconnects by itself (resuming from the last id); when it gives up, the stream is reopened with
 * a fresh token from the last id seen, so no event is missed or repeated.
 */
export function useLiveStream(query: Record<string, string | undefined>, handlers: LiveHandlers, enabled = true): void {
  // The latest handlers without reopening the stream when the caller passes new ones each render.
  const onReset = useEffectEvent(() => handlers.onReset?.());
  const onEvent = useEffectEvent((event: VigilEvent) => handlers.onEvent?.(event));
  const onSession = useEffectEvent((session: Session) => handlers.onSession?.(session));
  const queryKey = JSON.stringify(query);

  useEffect(() => {
    if (!enabled) return;
    let source: EventSource | null = null;
    let lastEventId: string | null = null;
    let timer: number | undefined;
    let stopped = false;

    const reopenLater = () => {
      if (!stopped) timer = window.setTimeout(() => void open(), REOPEN_MS);
    };
    const open = async () => {
      let token: string;
      try {
        token = (await observe('POST /api/stream/tokens')).token;
      } catch {
        return reopenLater();
      }
      if (stopped) return;
      const params = new URLSearchParams();
      for (const [name, value] of Object.entries(JSON.parse(queryKey) as Record<string, string | undefined>)) {
        if (value) params.set(name, value);
      }
      params.set('token', token);
      if (lastEventId !== null) params.set('lastEventId', lastEventId);
      const current = new EventSource(`/api/stream?${params.toString()}`);
      source = current;
      const track = (message: MessageEvent<string>) => {
        if (message.lastEventId) lastEventId = message.lastEventId;
        return JSON.parse(message.data) as unknown;
      };
      current.addEventListener('ready', (message) => {
        if (!(track(message) as { resumed: boolean }).resumed) onReset();
      });
      current.addEventListener('event', (message) => onEvent(track(message) as VigilEvent));
      current.addEventListener('session', (message) => onSession(track(message) as Session));
      current.onerror = () => {
        if (current.readyState !== EventSource.CLOSED) return; // the browser reconnects by itself
        current.close();
        reopenLater();
      };
    };
    void open();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
      source?.close();
    };
  }, [enabled, queryKey]);
}

/** `fn` at most once per `ms`, the last call of a burst always running (at the end of the interval). */
export function useThrottled(fn: () => void, ms: number): () => void {
  const fnRef = useRef(fn);
  useLayoutEffect(() => {
    fnRef.current = fn;
  });
  const state = useRef<{ last: number; timer: number | undefined }>({ last: 0, timer: undefined });
  useEffect(() => () => window.clearTimeout(state.current.timer), []);
  return useCallback(() => {
    const s = state.current;
    if (s.timer !== undefined) return;
    const wait = s.last + ms - Date.now();
    const run = () => {
      s.timer = undefined;
      s.last = Date.now();
      fnRef.current();
    };
    if (wait <= 0) run();
    else s.timer = window.setTimeout(run, wait);
  }, [ms]);
}
