#!/usr/bin/env bash
# Any language, no SDK: a session recorded with plain HTTP (curl). Run it against `npm start`:
#
#   VIGIL_API_KEY=<observe key> bash examples/http.sh
#
# One batch of events (stored atomically, chained with SHA-256), then the session as observe
# summarises it and the chain's verdict.
set -euo pipefail
VIGIL=${VIGIL_URL:-http://localhost:3400}
: "${VIGIL_API_KEY:?set VIGIL_API_KEY to an observe key (POST $VIGIL/api/keys creates the first one)}"
AUTH="Authorization: Bearer $VIGIL_API_KEY"
SESSION="http-example-$(date +%s)-$$"

curl -sf -X POST "$VIGIL/api/events" -H "$AUTH" -H 'content-type: application/json' -d @- <<JSON >/dev/null
{"events": [
  {"sessionId": "$SESSION", "agentId": "http-agent", "eventType": "session_started", "payload": {"tags": ["example"]}},
  {"sessionId": "$SESSION", "agentId": "http-agent", "eventType": "llm_call",
   "payload": {"callId": "c1", "provider": "openai", "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather in Oslo?"}]}},
  {"sessionId": "$SESSION", "agentId": "http-agent", "eventType": "llm_response",
   "payload": {"callId": "c1", "provider": "openai", "model": "gpt-4o-mini", "completion": "Let me check.", "finishReason": "tool_calls",
               "usage": {"inputTokens": 120, "outputTokens": 12}, "costUsd": 0.0000252, "latencyMs": 640}},
  {"sessionId": "$SESSION", "agentId": "http-agent", "eventType": "tool_call", "payload": {"callId": "t1", "toolName": "weather", "arguments": {"city": "Oslo"}}},
  {"sessionId": "$SESSION", "agentId": "http-agent", "eventType": "tool_response", "payload": {"callId": "t1", "toolName": "weather", "result": {"celsius": -3}, "durationMs": 85}},
  {"sessionId": "$SESSION", "agentId": "http-agent", "eventType": "session_ended", "payload": {"reason": "completed", "summary": "-3 °C in Oslo"}}
]}
JSON

echo "Session $SESSION:"
curl -sf "$VIGIL/api/sessions/$SESSION" -H "$AUTH"; echo
echo "Chain:"
curl -sf "$VIGIL/api/audit/verify?sessionId=$SESSION" -H "$AUTH"; echo
