import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { observeConfigFromEnvironment } from '../config.ts';
import { judgeRequest, judgeSettings, parseProviderAnswer, parseVerdict, providerEndpoint, JudgeError } from './judge.ts';
import { checkRule, evaluateRules, toolMatcher, type SessionFacts } from './rules.ts';
import { complianceBodySchema, createEvaluatorBodySchema, rulesSchema, scoreBodySchema } from './schemas.ts';
import { TRANSCRIPT_LINE_MAX, TRANSCRIPT_MAX, TranscriptBuilder, transcriptLine } from './transcript.ts';

const facts = (over: Partial<SessionFacts> = {}): SessionFacts => ({
  toolCalls: [
    { tool: 'db.delete', calls: 1 },
    { tool: 'db.query', calls: 3 },
    { tool: 'shell_exec', calls: 2 },
  ],
  severityCounts: { info: 5, warn: 1 },
  spendUsd: 0.03,
  ...over,
});

describe('tool patterns', () => {
  test('exact names match only themselves, case-sensitively', () => {
    const m = toolMatcher('db.query');
    assert.equal(m('db.query'), true);
    assert.equal(m('DB.query'), false);
    assert.equal(m('db.query2'), false);
  });
  test('a trailing * is a prefix, a leading * a suffix, both a substring, a lone * everything', () => {
    assert.equal(toolMatcher('db.*')('db.delete'), true);
    assert.equal(toolMatcher('db.*')('xdb.delete'), false);
    assert.equal(toolMatcher('*_exec')('shell_exec'), true);
    assert.equal(toolMatcher('*_exec')('shell_exec2'), false);
    assert.equal(toolMatcher('*ell*')('shell_exec'), true);
    assert.equal(toolMatcher('*ell*')('db.query'), false);
    assert.equal(toolMatcher('*')('anything'), true);
    // No regex or LIKE semantics leak in.
    assert.equal(toolMatcher('db.%')('db.query'), false);
    assert.equal(toolMatcher('d_.query')('db.query'), false);
  });
  test('a * in the middle of a pattern is refused by the schema', () => {
    const bad = rulesSchema.safeParse([{ id: 'r', type: 'tool_denylist', tools: ['db*query'] }]);
    assert.equal(bad.success, false);
    assert.equal(rulesSchema.safeParse([{ id: 'r', type: 'tool_denylist', tools: ['*db*', '*', 'db.*'] }]).success, true);
  });
});

describe('rules', () => {
  test('each rule type against the facts', () => {
    assert.equal(checkRule({ id: 'a', type: 'tool_denylist', tools: ['rm'] }, facts()), null);
    assert.deepEqual(checkRule({ id: 'a', type: 'tool_denylist', tools: ['db.*'] }, facts()), {
      ruleId: 'a',
      ruleType: 'tool_denylist',
      detail: 'called denied tools: db.delete (1 call), db.query (3 calls)',
    });
    assert.equal(checkRule({ id: 'b', type: 'tool_allowlist', tools: ['db.*', 'shell_exec'] }, facts()), null);
    assert.deepEqual(
      checkRule({ id: 'b', type: 'tool_allowlist', tools: ['db.query'] }, facts())?.detail,
      'called tools outside the allowlist: db.delete (1 call), shell_exec (2 calls)',
    );
    assert.equal(checkRule({ id: 'c', type: 'max_cost', maxUsd: 0.03 }, facts()), null, 'spend equal to maxUsd complies');
    assert.match(checkRule({ id: 'c', type: 'max_cost', maxUsd: 0.0299 }, facts())!.detail, /0\.03 USD exceeds maxUsd 0\.0299/);
    assert.equal(checkRule({ id: 'd', type: 'no_severity_above', severity: 'warn' }, facts()), null);
    assert.equal(checkRule({ id: 'd', type: 'no_severity_above', severity: 'info' }, facts())!.detail, '1 event above info: warn ×1');
    assert.equal(
      checkRule({ id: 'd', type: 'no_severity_above', severity: 'debug' }, facts({ severityCounts: { info: 2, critical: 1 } }))!.detail,
      '3 events above debug: info ×2, critical ×1',
    );
    assert.equal(checkRule({ id: 'd', type: 'no_severity_above', severity: 'critical' }, facts({ severityCounts: { critical: 4 } })), null);
  });

  test('score is the share of rules passed; passThreshold is inclusive; without it any violation fails', () => {
    const rules = [
      { id: '1', type: 'tool_denylist' as const, tools: ['rm'] },
      { id: '2', type: 'max_cost' as const, maxUsd: 1 },
      { id: '3', type: 'no_severity_above' as const, severity: 'error' as const },
      { id: '4', type: 'tool_denylist' as const, tools: ['shell_*'] },
    ];
    const absent = evaluateRules(rules, facts(), null);
    assert.equal(absent.score, 0.75);
    assert.equal(absent.passed, false);
    assert.equal(absent.rulesEvaluated, 4);
    assert.deepEqual(
      absent.violations.map((v) => v.ruleId),
      ['4'],
    );
    assert.equal(evaluateRules(rules, facts(), 0.75).passed, true);
    assert.equal(evaluateRules(rules, facts(), 0.7501).passed, false);
    assert.equal(evaluateRules(rules.slice(0, 3), facts(), null).passed, true);
    assert.equal(evaluateRules(rules.slice(0, 3), facts(), null).score, 1);
  });
});

describe('request bodies', () => {
  test('compliance: rules xor evaluatorId, passThreshold only with rules', () => {
    const rules = [{ id: 'r', type: 'max_cost', maxUsd: 1 }];
    assert.equal(complianceBodySchema.safeParse({ rules }).success, true);
    assert.equal(complianceBodySchema.safeParse({ rules, passThreshold: 0.5 }).success, true);
    assert.equal(complianceBodySchema.safeParse({ evaluatorId: 'e' }).success, true);
    assert.equal(complianceBodySchema.safeParse({}).success, false);
    assert.equal(complianceBodySchema.safeParse({ rules, evaluatorId: 'e' }).success, false);
    assert.equal(complianceBodySchema.safeParse({ evaluatorId: 'e', passThreshold: 0.5 }).success, false);
    assert.equal(complianceBodySchema.safeParse({ rules, passThreshold: 1.01 }).success, false);
  });
  test('score: rubric xor evaluatorId', () => {
    assert.equal(scoreBodySchema.safeParse({ rubric: 'be nice' }).success, true);
    assert.equal(scoreBodySchema.safeParse({ rubric: '   ' }).success, false);
    assert.equal(scoreBodySchema.safeParse({ rubric: 'x'.repeat(10_001) }).success, false);
    assert.equal(scoreBodySchema.safeParse({ rubric: 'x'.repeat(10_000) }).success, true);
    assert.equal(scoreBodySchema.safeParse({ evaluatorId: 'e', model: 'gpt-4o' }).success, false);
  });
  test('evaluators: the fields of the kind are required, the other kind’s refused', () => {
    assert.equal(createEvaluatorBodySchema.safeParse({ name: 'n', kind: 'compliance' }).success, false);
    assert.equal(createEvaluatorBodySchema.safeParse({ name: 'n', kind: 'llm_judge' }).success, false);
    assert.equal(
      createEvaluatorBodySchema.safeParse({ name: 'n', kind: 'llm_judge', rubric: 'r', rules: [{ id: 'a', type: 'max_cost', maxUsd: 1 }] }).success,
      false,
    );
    assert.equal(
      createEvaluatorBodySchema.safeParse({ name: 'n', kind: 'compliance', rules: [{ id: 'a', type: 'max_cost', maxUsd: 1 }], model: 'gpt-4o' }).success,
      false,
    );
  });
});

describe('transcript', () => {
  const event = (seq: number, size = 10) => ({
    seq,
    timestamp: '2026-11-22T10:00:00.000Z',
    eventType: 'custom',
    severity: 'info',
    payload: `{"d":"${'x'.repeat(size)}"}`,
  });

  test('a short session is every line in order', () => {
    const builder = new TranscriptBuilder();
    for (let i = 0; i < 3; i++) builder.add(event(i));
    const t = builder.finish();
    assert.equal(t.omitted, 0);
    assert.equal(t.events, 3);
    assert.deepEqual(
      t.text.split('\n').map((l) => l.split(' ')[0]),
      ['#0', '#1', '#2'],
    );
  });

  test('lines are cut at TRANSCRIPT_LINE_MAX and the whole at TRANSCRIPT_MAX: head, marker, tail; deterministic', () => {
    assert.equal(transcriptLine(event(0, 5000)).length, TRANSCRIPT_LINE_MAX);
    const build = () => {
      const builder = new TranscriptBuilder();
      for (let i = 0; i < 500; i++) builder.add(event(i, 3000));
      return builder.finish();
    };
    const t = build();
    assert.ok(t.text.length <= TRANSCRIPT_MAX + 100, `${t.text.length}`);
    assert.ok(t.omitted > 400);
    const lines = t.text.split('\n');
    assert.ok(lines[0]!.startsWith('#0 '));
    assert.ok(lines.at(-1)!.startsWith('#499 '));
    assert.ok(lines.includes(`[… ${t.omitted} events omitted …]`));
    assert.equal(lines.length, 500 - t.omitted + 1);
    assert.equal(build().text, t.text);
  });
});

describe('judge wire format', () => {
  const settings = (provider: 'openai' | 'anthropic', extra: Record<string, string> = {}) =>
    judgeSettings(observeConfigFromEnvironment({ LLM_PROVIDER: provider, LLM_API_KEY: 'k', ...extra }))!;

  test('unconfigured without provider or key; defaults per provider', () => {
    assert.equal(judgeSettings(observeConfigFromEnvironment({ LLM_API_KEY: 'k' })), null);
    assert.equal(judgeSettings(observeConfigFromEnvironment({ LLM_PROVIDER: 'openai' })), null);
    assert.equal(settings('openai').model, 'gpt-4o-mini');
    assert.equal(settings('anthropic').model, 'claude-haiku-4-5-20251001');
    assert.equal(settings('openai', { LLM_MODEL: 'gpt-4.1-nano' }).model, 'gpt-4.1-nano');
    assert.equal(settings('openai').timeoutMs, 30_000);
  });

  test('endpoints keep a base path and accept a base ending in /v1', () => {
    assert.equal(providerEndpoint('openai', 'https://api.openai.com'), 'https://api.openai.com/v1/chat/completions');
    assert.equal(providerEndpoint('openai', 'http://h:1/proxy/v1/'), 'http://h:1/proxy/v1/chat/completions');
    assert.equal(providerEndpoint('anthropic', 'https://api.anthropic.com'), 'https://api.anthropic.com/v1/messages');
    assert.equal(judgeRequest(settings('anthropic'), 'm', 'p').headers['anthropic-version'], '2023-06-01');
  });

  test('verdicts need a score in [0, 1]: extra keys are dropped, a missing reasoning is empty', () => {
    assert.deepEqual(parseVerdict('{"score":0.5,"reasoning":"ok"}'), { score: 0.5, reasoning: 'ok' });
    assert.deepEqual(parseVerdict('```json\n{"score":1,"reasoning":"fine"}\n```'), { score: 1, reasoning: 'fine' });
    assert.deepEqual(parseVerdict('{"score":0.2,"reasoning":"x","passed":true,"confidence":0.9}'), { score: 0.2, reasoning: 'x' });
    assert.deepEqual(parseVerdict('{"score":1}'), { score: 1, reasoning: '' });
    for (const bad of [
      '',
      'score: 1',
      '{"score":1.2,"reasoning":"x"}',
      '{"score":-0.1}',
      '{"score":"1","reasoning":"x"}',
      '{"reasoning":"x"}',
      '[1]',
      '{"score":1,"reasoning":7}',
    ]) {
      assert.throws(() => parseVerdict(bad), Error, bad);
    }
  });

  test('provider answers: text and usage, or a JudgeError that keeps the usage when billed', () => {
    assert.deepEqual(parseProviderAnswer('openai', { choices: [{ message: { content: 'x' } }], usage: { prompt_tokens: 3, completion_tokens: 4 } }), {
      text: 'x',
      usage: { inputTokens: 3, outputTokens: 4 },
    });
    assert.deepEqual(
      parseProviderAnswer('anthropic', {
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
        usage: { input_tokens: 1, output_tokens: 2 },
      }),
      { text: 'ab', usage: { inputTokens: 1, outputTokens: 2 } },
    );
    try {
      parseProviderAnswer('openai', { choices: [{ message: { content: null } }], usage: { prompt_tokens: 3, completion_tokens: 4 } });
      assert.fail('expected a JudgeError');
    } catch (error) {
      assert.ok(error instanceof JudgeError);
      assert.deepEqual(error.usage, { inputTokens: 3, outputTokens: 4 });
    }
    assert.throws(
      () => parseProviderAnswer('anthropic', { content: 'x' }),
      (e: unknown) => e instanceof JudgeError && e.usage === null,
    );
  });
});
