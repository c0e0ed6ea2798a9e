import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  compilePolicySet,
  evaluatePolicies,
  type CompiledPolicySet,
  type EvaluatedRequest,
  type Matcher,
  type PolicyDecision,
  type PolicyDefinition,
  type RegexSafety,
  type Rule,
  storedDecisionText,
} from './engine.ts';
import { canonicalJson, isSafePattern } from '@vigil/platform';

// Pure unit tests of the policy engine: no database, no HTTP.

const allSafe: RegexSafety = () => true;

function request(overrides: Partial<EvaluatedRequest> = {}): EvaluatedRequest {
  return { action: 'deploy', status: 'pending', urgency: 'normal', params: {}, context: {}, ...overrides };
}

function policy(id: string, rules: Rule[], options: { priority?: number; enabled?: boolean; name?: string } = {}): PolicyDefinition {
  return { id, name: options.name ?? `policy ${id}`, priority: options.priority ?? 100, enabled: options.enabled ?? true, rules };
}

function decide(policies: PolicyDefinition[], req: EvaluatedRequest, isSafe: RegexSafety = allSafe): PolicyDecision {
  return evaluatePolicies(compilePolicySet(policies, isSafe), req);
}

/** Whether one rule with the given match map matches the request. */
function matches(match: Record<string, Matcher>, req: EvaluatedRequest, isSafe: RegexSafety = allSafe): boolean {
  return decide([policy('p', [{ match, decision: 'auto_approve' }])], req, isSafe).decision === 'auto_approve';
}

const approveAll = (extra: Partial<Rule> = {}): Rule => ({ match: {}, decision: 'auto_approve', ...extra });

describe('policy engine: which policies and in which order', () => {
  test('compilePolicySet keeps only enabled policies, ascending priority, ties broken by id', () => {
    const compiled = compilePolicySet(
      [
        policy('d', [], { priority: 5 }),
        policy('c', [], { priority: 1, enabled: false }),
        policy('b', [], { priority: 5 }),
        policy('z', [], { priority: -3 }),
        policy('a', [], { priority: 10 }),
      ],
      allSafe,
    );
    assert.deepEqual(
      compiled.policies.map((p) => [p.id, p.priority]),
      [
        ['z', -3],
        ['b', 5],
        ['d', 5],
        ['a', 10],
      ],
    );
  });

  test('a disabled policy is skipped entirely, even with the lowest priority and a rule that matches everything', () => {
    const decision = decide(
      [
        policy('off', [approveAll()], { priority: 0, enabled: false }),
        policy('on', [{ match: { action: 'deploy' }, decision: 'auto_deny' }], { priority: 50 }),
      ],
      request(),
    );
    assert.equal(decision.decision, 'auto_deny');
    assert.equal(decision.policyId, 'on');
  });

  test('only disabled policies: the default decision', () => {
    const decision = decide([policy('off', [approveAll()], { enabled: false })], request());
    assert.equal(decision.decision, 'route_to_human');
    assert.equal(decision.policyId, null);
  });

  test('lower priority number is evaluated first, whatever the input order', () => {
    const low = policy('low', [{ match: {}, decision: 'auto_deny' }], { priority: 1 });
    const high = policy('high', [{ match: {}, decision: 'auto_approve' }], { priority: 2 });
    assert.equal(decide([high, low], request()).policyId, 'low');
    assert.equal(decide([low, high], request()).policyId, 'low');
    assert.equal(decide([high, low], request()).decision, 'auto_deny');
  });

  test('equal priorities are ordered by id, so the result does not depend on input order', () => {
    const a = policy('01-a', [{ match: {}, decision: 'route_to_agent' }], { priority: 7 });
    const b = policy('02-b', [{ match: {}, decision: 'auto_deny' }], { priority: 7 });
    assert.equal(decide([b, a], request()).policyId, '01-a');
    assert.equal(decide([a, b], request()).policyId, '01-a');
  });

  test('rules inside a policy are evaluated in array order; the first matching rule decides', () => {
    const p = policy('p', [
      { match: { action: 'other' }, decision: 'auto_deny' },
      { match: { action: 'deploy' }, decision: 'route_to_agent', approvers: ['first'] },
      { match: { action: 'deploy' }, decision: 'auto_approve', approvers: ['second'] },
    ]);
    const decision = decide([p], request());
    assert.equal(decision.decision, 'route_to_agent');
    assert.equal(decision.ruleIndex, 1);
    assert.deepEqual(decision.approvers, ['first']);
  });

  test('the first matching rule across all policies wins: a later policy is used when earlier ones do not match', () => {
    const policies = [
      policy(
        'p1',
        [
          { match: { action: 'delete' }, decision: 'auto_deny' },
          { match: { urgency: 'low' }, decision: 'auto_deny' },
        ],
        { priority: 1 },
      ),
      policy(
        'p2',
        [
          { match: { action: 'nope' }, decision: 'auto_deny' },
          { match: { action: 'deploy' }, decision: 'auto_approve' },
        ],
        { priority: 2 },
      ),
      policy('p3', [approveAll({ decision: 'route_to_agent' })], { priority: 3 }),
    ];
    const decision = decide(policies, request());
    assert.equal(decision.policyId, 'p2');
    assert.equal(decision.policyName, 'policy p2');
    assert.equal(decision.ruleIndex, 1);
    assert.equal(decision.decision, 'auto_approve');
    // A request that only the catch-all matches falls through to p3.
    assert.equal(decide(policies, request({ action: 'read' })).policyId, 'p3');
    // p1's second rule catches low urgency before p2 is looked at.
    const low = decide(policies, request({ urgency: 'low' }));
    assert.equal(low.policyId, 'p1');
    assert.equal(low.ruleIndex, 1);
  });

  test('no matching rule: route_to_human with policyId null and empty routing', () => {
    const expected: PolicyDecision = {
      decision: 'route_to_human',
      policyId: null,
      policyName: null,
      ruleIndex: null,
      approvers: [],
      channels: [],
      requireReason: false,
    };
    assert.deepEqual(decide([], request()), expected);
    assert.deepEqual(decide([policy('p', [{ match: { action: 'other' }, decision: 'auto_approve' }])], request()), expected);
  });

  test('a policy with no rules never matches', () => {
    assert.equal(decide([policy('empty', [], { priority: 0 }), policy('next', [approveAll()])], request()).policyId, 'next');
  });

  test('a rule with an empty match map matches every request', () => {
    assert.equal(matches({}, request()), true);
    assert.equal(matches({}, request({ action: 'anything', params: { x: 1 } })), true);
  });

  test('every decision value is returned as written', () => {
    for (const value of ['auto_approve', 'auto_deny', 'route_to_human', 'route_to_agent'] as const) {
      const decision = decide([policy('p', [{ match: {}, decision: value }])], request());
      assert.equal(decision.decision, value);
      assert.equal(decision.policyId, 'p');
    }
  });

  test('approvers, channels and requireReason of the matching rule are carried into the decision', () => {
    const decision = decide(
      [
        policy(
          'routing',
          [
            { match: { action: 'other' }, decision: 'route_to_agent', approvers: ['wrong'], channels: ['wrong'], requireReason: false },
            { match: { action: 'deploy' }, decision: 'route_to_human', approvers: ['alice', 'bob'], channels: ['#ops', 'email'], requireReason: true },
          ],
          { name: 'Deploy routing' },
        ),
      ],
      request(),
    );
    assert.deepEqual(decision, {
      decision: 'route_to_human',
      policyId: 'routing',
      policyName: 'Deploy routing',
      ruleIndex: 1,
      approvers: ['alice', 'bob'],
      channels: ['#ops', 'email'],
      requireReason: true,
      // A routing rule without a plan of its own gets the default: fail closed at the deadline (escalation/).
      onDeadline: { escalate: [], remindBeforeSeconds: 0 },
    });
  });

  test('a rule without approvers, channels or requireReason gives empty lists and requireReason false', () => {
    const decision = decide([policy('p', [{ match: {}, decision: 'route_to_agent' }])], request());
    assert.deepEqual(decision.approvers, []);
    assert.deepEqual(decision.channels, []);
    assert.equal(decision.requireReason, false);
  });
});

describe('policy engine: matchers', () => {
  test('exact string, number and boolean compare with strict equality (no type coercion)', () => {
    const req = request({ params: { env: 'prod', count: 5, dryRun: false, zero: 0 } });
    assert.equal(matches({ 'params.env': 'prod' }, req), true);
    assert.equal(matches({ 'params.env': 'Prod' }, req), false);
    assert.equal(matches({ 'params.count': 5 }, req), true);
    assert.equal(matches({ 'params.count': '5' }, req), false);
    assert.equal(matches({ 'params.count': 6 }, req), false);
    assert.equal(matches({ 'params.dryRun': false }, req), true);
    assert.equal(matches({ 'params.dryRun': true }, req), false);
    assert.equal(matches({ 'params.dryRun': 'false' }, req), false);
    assert.equal(matches({ 'params.zero': false }, req), false);
    assert.equal(matches({ 'params.zero': '' }, req), false);
  });

  test('exact null matches a null field or a missing one, nothing else', () => {
    const req = request({ params: { owner: null, zero: 0, empty: '', no: false }, context: { user: {} } });
    assert.equal(matches({ 'params.owner': null }, req), true);
    assert.equal(matches({ 'params.absent': null }, req), true);
    assert.equal(matches({ 'context.user.name': null }, req), true);
    assert.equal(matches({ 'context.nothing.deeper.still': null }, req), true);
    assert.equal(matches({ 'params.zero': null }, req), false);
    assert.equal(matches({ 'params.empty': null }, req), false);
    assert.equal(matches({ 'params.no': null }, req), false);
    assert.equal(matches({ action: null }, req), false);
  });

  test('$lt, $gt, $lte, $gte compare numbers with the right boundaries', () => {
    const at = (amount: unknown) => request({ params: { amount } });
    assert.equal(matches({ amount: { $lt: 100 } }, at(99.5)), true);
    assert.equal(matches({ amount: { $lt: 100 } }, at(100)), false);
    assert.equal(matches({ amount: { $lte: 100 } }, at(100)), true);
    assert.equal(matches({ amount: { $lte: 100 } }, at(100.01)), false);
    assert.equal(matches({ amount: { $gt: 100 } }, at(100)), false);
    assert.equal(matches({ amount: { $gt: 100 } }, at(101)), true);
    assert.equal(matches({ amount: { $gte: 100 } }, at(100)), true);
    assert.equal(matches({ amount: { $gte: 100 } }, at(99)), false);
    assert.equal(matches({ amount: { $lt: 0 } }, at(-1)), true);
  });

  test('comparison operators only match numbers: a numeric string, boolean, null or missing field does not match', () => {
    for (const value of ['50', '', true, null, [50], { n: 50 }]) {
      const req = request({ params: { amount: value } });
      for (const op of ['$lt', '$gt', '$lte', '$gte'] as const) {
        const bound = op === '$lt' || op === '$lte' ? 100 : 0;
        assert.equal(matches({ amount: { [op]: bound } }, req), false, `${op} ${bound} against ${JSON.stringify(value)}`);
      }
    }
    assert.equal(matches({ 'params.missing': { $gte: 0 } }, request()), false);
    assert.equal(matches({ 'params.missing': { $lt: 0 } }, request()), false);
  });

  test('$in matches strings and numbers that equal an item, strictly', () => {
    const req = request({ params: { env: 'staging', replicas: 3, flag: true } });
    assert.equal(matches({ 'params.env': { $in: ['dev', 'staging'] } }, req), true);
    assert.equal(matches({ 'params.env': { $in: ['dev', 'prod'] } }, req), false);
    assert.equal(matches({ 'params.replicas': { $in: [1, 3, 5] } }, req), true);
    assert.equal(matches({ 'params.replicas': { $in: [2, 4] } }, req), false);
    assert.equal(matches({ 'params.replicas': { $in: ['3'] } }, req), false);
    assert.equal(matches({ 'params.env': { $in: [] } }, req), false);
    assert.equal(matches({ 'params.flag': { $in: ['true', 1] } }, req), false);
    assert.equal(matches({ 'params.missing': { $in: ['dev'] } }, req), false);
    assert.equal(matches({ action: { $in: ['deploy', 'rollback'] } }, req), true);
  });

  test('$regex only matches strings', () => {
    const req = request({ action: 'deploy-service', params: { code: 12345, text: '12345', list: ['12345'] } });
    assert.equal(matches({ action: { $regex: '^deploy-' } }, req), true);
    assert.equal(matches({ action: { $regex: '^rollback' } }, req), false);
    assert.equal(matches({ 'params.text': { $regex: '^\\d+$' } }, req), true);
    assert.equal(matches({ 'params.code': { $regex: '^\\d+$' } }, req), false);
    assert.equal(matches({ 'params.list': { $regex: '12345' } }, req), false);
    assert.equal(matches({ 'params.missing': { $regex: '.*' } }, req), false);
  });

  test('several operators in one matcher must all hold: {$gte:1, $lte:9} is a range', () => {
    const range: Matcher = { $gte: 1, $lte: 9 };
    const at = (n: unknown) => request({ params: { n } });
    assert.equal(matches({ n: range }, at(0)), false);
    assert.equal(matches({ n: range }, at(1)), true);
    assert.equal(matches({ n: range }, at(5)), true);
    assert.equal(matches({ n: range }, at(9)), true);
    assert.equal(matches({ n: range }, at(9.0001)), false);
    assert.equal(matches({ n: range }, at(10)), false);
    // An empty range never matches.
    assert.equal(matches({ n: { $gt: 5, $lt: 5 } }, at(5)), false);
    // $in and $regex together: both must hold.
    const both: Matcher = { $in: ['prod-eu', 'prod-us', 'dev-eu'], $regex: '^prod-' };
    assert.equal(matches({ 'params.env': both }, request({ params: { env: 'prod-eu' } })), true);
    assert.equal(matches({ 'params.env': both }, request({ params: { env: 'dev-eu' } })), false);
    assert.equal(matches({ 'params.env': both }, request({ params: { env: 'prod-asia' } })), false);
  });

  test('several fields in one match are AND: every field must match', () => {
    const match: Record<string, Matcher> = { action: 'transfer', 'params.amount': { $gt: 1000 }, urgency: { $in: ['high', 'critical'] } };
    assert.equal(matches(match, request({ action: 'transfer', urgency: 'high', params: { amount: 5000 } })), true);
    assert.equal(matches(match, request({ action: 'transfer', urgency: 'low', params: { amount: 5000 } })), false);
    assert.equal(matches(match, request({ action: 'transfer', urgency: 'high', params: { amount: 10 } })), false);
    assert.equal(matches(match, request({ action: 'deploy', urgency: 'high', params: { amount: 5000 } })), false);
  });

  test('dot paths reach into params and context, nested', () => {
    const req = request({
      params: { target: { cluster: { region: 'eu-west-1', nodes: 12 } } },
      context: { user: { role: 'admin', team: { name: 'platform' } }, sessionId: 's-1' },
    });
    assert.equal(matches({ 'params.target.cluster.region': 'eu-west-1' }, req), true);
    assert.equal(matches({ 'params.target.cluster.nodes': { $gte: 10 } }, req), true);
    assert.equal(matches({ 'context.user.role': 'admin' }, req), true);
    assert.equal(matches({ 'context.user.team.name': { $regex: '^plat' } }, req), true);
    assert.equal(matches({ 'context.sessionId': 's-1' }, req), true);
    assert.equal(matches({ 'context.user.role': 'viewer' }, req), false);
    // `context.*` is not flattened: context keys are not top-level names.
    assert.equal(matches({ sessionId: 's-1' }, req), false);
  });

  test('a path that does not exist never matches, whatever the matcher (exact null aside)', () => {
    const req = request({ params: { amount: 10, tags: ['a'], nested: { x: 'y' } }, context: {} });
    const notNull: Matcher[] = ['', 0, false, 'y', { $gte: 0 }, { $lte: 0 }, { $in: ['y', 0] }, { $regex: '.*' }, { $regex: '^$' }];
    for (const path of [
      'params.nope',
      'nope',
      'context.user.role',
      'params.amount.value',
      'params.nested.x.y',
      'params.toString',
      'context.constructor',
      'status.length',
    ]) {
      for (const matcher of notNull) {
        assert.equal(matches({ [path]: matcher }, req), false, `${path} ${JSON.stringify(matcher)}`);
      }
      assert.equal(matches({ [path]: null }, req), true, `${path} null`);
    }
  });

  test('keys of params are flattened into the top-level namespace', () => {
    const req = request({ params: { amount: 250, target: { env: 'prod' } } });
    assert.equal(matches({ amount: 250 }, req), true);
    assert.equal(matches({ amount: { $gt: 200 } }, req), true);
    assert.equal(matches({ 'target.env': 'prod' }, req), true);
    assert.equal(matches({ 'params.amount': 250 }, req), true);
  });

  test('a params key named action, status or urgency shadows the request field', () => {
    const req = request({ action: 'deploy', status: 'pending', urgency: 'normal', params: { action: 'read', status: 'draft', urgency: 'critical' } });
    assert.equal(matches({ action: 'read' }, req), true);
    assert.equal(matches({ action: 'deploy' }, req), false);
    assert.equal(matches({ status: 'draft' }, req), true);
    assert.equal(matches({ status: 'pending' }, req), false);
    assert.equal(matches({ urgency: 'critical' }, req), true);
    assert.equal(matches({ urgency: 'normal' }, req), false);
    // The request fields stay reachable where nothing shadows them.
    assert.equal(matches({ action: 'deploy' }, request({ params: { other: 1 } })), true);
    assert.equal(matches({ status: 'pending', urgency: 'normal' }, request()), true);
  });

  test('a params key that shadows with null is a null, not the request field', () => {
    const req = request({ action: 'deploy', params: { action: null } });
    assert.equal(matches({ action: null }, req), true);
    assert.equal(matches({ action: 'deploy' }, req), false);
  });

  test('an unsafe regex (isSafe false) never matches, and the other rules still apply', () => {
    const seen: string[] = [];
    const judge: RegexSafety = (pattern) => {
      seen.push(pattern);
      return pattern !== '^deploy$';
    };
    const p = policy('p', [
      { match: { action: { $regex: '^deploy$' } }, decision: 'auto_approve' },
      { match: { action: { $regex: '^dep' } }, decision: 'auto_deny' },
    ]);
    const decision = decide([p], request(), judge);
    assert.equal(decision.decision, 'auto_deny');
    assert.equal(decision.ruleIndex, 1);
    assert.ok(seen.includes('^deploy$'));
    // Combined with operators that hold, the unsafe regex still makes the matcher fail.
    assert.equal(matches({ action: { $in: ['deploy'], $regex: '^deploy$' } }, request(), judge), false);
    // A rule whose only matcher is an unsafe regex never matches, even against a matching string.
    assert.equal(
      matches({ action: { $regex: '^deploy$' } }, request(), () => false),
      false,
    );
  });

  test('with the real ReDoS judge, a catastrophic or invalid pattern never matches and never throws', () => {
    const req = request({ action: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', params: { text: '(' } });
    assert.equal(matches({ action: { $regex: '^(a+)+$' } }, req, isSafePattern), false);
    assert.equal(matches({ 'params.text': { $regex: '(' } }, req, isSafePattern), false);
    assert.equal(matches({ action: { $regex: '^a+$' } }, req, isSafePattern), true);
  });

  test('regexes are judged and compiled once, at compile time, not per evaluation', () => {
    let calls = 0;
    const judge: RegexSafety = () => {
      calls += 1;
      return true;
    };
    const compiled = compilePolicySet([policy('p', [{ match: { action: { $regex: '^dep' } }, decision: 'auto_approve' }])], judge);
    assert.equal(calls, 1);
    for (let i = 0; i < 5; i += 1) assert.equal(evaluatePolicies(compiled, request()).decision, 'auto_approve');
    assert.equal(calls, 1);
  });

  test('evaluation does not modify the request', () => {
    const req = request({ params: { action: 'read', nested: { a: 1 } }, context: { user: 'u' } });
    const before = structuredClone(req);
    decide([policy('p', [{ match: { action: 'read', 'params.nested.a': 1 }, decision: 'auto_approve' }])], req);
    assert.deepEqual(req, before);
  });
});

describe('policy engine: matcher table', () => {
  const base = request({
    action: 'transfer',
    urgency: 'high',
    params: { amount: 1500, currency: 'EUR', iban: 'DE89370400440532013000', recurring: false, note: null, priority: 2, tags: { env: 'prod' } },
    context: { agent: { id: 'agent-7', tier: 3 }, sessionId: 'sess-42' },
    budget: { 'agent-day': { spendUsd: 42.5, softUsd: 40, hardUsd: null, level: 'soft' } },
  });
  const cases: Array<[string, Record<string, Matcher>, boolean]> = [
    ['exact action', { action: 'transfer' }, true],
    ['exact action, other value', { action: 'deploy' }, false],
    ['exact urgency', { urgency: 'high' }, true],
    ['exact status', { status: 'pending' }, true],
    ['exact number', { 'params.amount': 1500 }, true],
    ['exact number as string', { 'params.amount': '1500' }, false],
    ['exact boolean', { 'params.recurring': false }, true],
    ['exact boolean, other value', { 'params.recurring': true }, false],
    ['null on null field', { 'params.note': null }, true],
    ['null on missing field', { 'params.memo': null }, true],
    ['null on present field', { 'params.currency': null }, false],
    ['$lt true', { amount: { $lt: 2000 } }, true],
    ['$lt boundary', { amount: { $lt: 1500 } }, false],
    ['$lte boundary', { amount: { $lte: 1500 } }, true],
    ['$gt boundary', { amount: { $gt: 1500 } }, false],
    ['$gte boundary', { amount: { $gte: 1500 } }, true],
    ['$gt on a string', { currency: { $gt: 0 } }, false],
    ['$gte on the numeric-looking iban string', { iban: { $gte: 0 } }, false],
    ['range inside', { amount: { $gte: 1000, $lte: 2000 } }, true],
    ['range outside', { amount: { $gte: 0, $lte: 1000 } }, false],
    ['$in string', { currency: { $in: ['EUR', 'USD'] } }, true],
    ['$in string, absent', { currency: { $in: ['GBP'] } }, false],
    ['$in number', { priority: { $in: [1, 2] } }, true],
    ['$in number as string', { priority: { $in: ['2'] } }, false],
    ['$regex on string', { iban: { $regex: '^DE\\d{20}$' } }, true],
    ['$regex on number', { amount: { $regex: '^15' } }, false],
    ['$regex no match', { currency: { $regex: '^US' } }, false],
    ['nested params path', { 'params.tags.env': 'prod' }, true],
    ['flattened nested path', { 'tags.env': 'prod' }, true],
    ['nested context path', { 'context.agent.id': 'agent-7' }, true],
    ['nested context number', { 'context.agent.tier': { $gt: 2 } }, true],
    ['missing context path', { 'context.agent.name': 'x' }, false],
    ['missing path with $in', { 'context.user.role': { $in: ['admin'] } }, false],
    ['path through a string', { 'currency.length': 3 }, false],
    ['budget spend', { 'budgets.agent-day.spendUsd': { $gt: 40 } }, true],
    ['budget spend boundary', { 'budgets.agent-day.spendUsd': { $lte: 42 } }, false],
    ['budget level', { 'budgets.agent-day.level': 'soft' }, true],
    ['budget null threshold', { 'budgets.agent-day.hardUsd': null }, true],
    ['budget field absent', { 'budgets.agent-day.windowUsd': null }, true],
    ['budget not covering the request', { 'budgets.team.spendUsd': { $gte: 0 } }, false],
    ['null on a budget not covering the request', { 'budgets.team.level': null }, true],
    ['an inherited name is no budget', { 'budgets.constructor.name': 'Object' }, false],
    ['two conditions on one budget', { 'budgets.agent-day.spendUsd': { $gt: 40 }, 'budgets.agent-day.level': 'hard' }, false],
    ['AND all hold', { action: 'transfer', amount: { $gt: 1000 }, 'context.sessionId': { $regex: '^sess-' } }, true],
    ['AND one fails', { action: 'transfer', amount: { $gt: 1000 }, 'context.sessionId': { $regex: '^run-' } }, false],
  ];
  for (const [name, match, expected] of cases) {
    test(`${name}: ${JSON.stringify(match)} → ${expected ? 'match' : 'no match'}`, () => {
      assert.equal(matches(match, base), expected);
    });
  }
});

describe('policy engine: the rule index never changes a decision', () => {
  /** The definition of the semantics: every enabled rule in order, each on its own (no index, no merging of candidates). */
  function linearDecision(set: CompiledPolicySet, req: EvaluatedRequest): [string | null, number | null] {
    for (const { policy: p, rule } of set.ordered) {
      if (evaluatePolicies(compilePolicySet([policy(p.id, [rule.rule])], allSafe), req).decision === rule.rule.decision) return [p.id, rule.index];
    }
    return [null, null];
  }

  test('indexed rules come back in priority order: a later bucket never overtakes an earlier unindexed rule', () => {
    const policies = [
      policy('first', [{ match: { amount: { $gt: 10 } }, decision: 'auto_deny' }], { priority: 1 }),
      policy('second', [{ match: { action: 'pay' }, decision: 'auto_approve' }], { priority: 2 }),
      policy('third', [{ match: { action: { $in: ['pay', 'refund'] }, 'context.team': 'a' }, decision: 'route_to_agent' }], { priority: 3 }),
    ];
    assert.equal(decide(policies, request({ action: 'pay', params: { amount: 50 } })).policyId, 'first');
    assert.equal(decide(policies, request({ action: 'pay', params: { amount: 5 } })).policyId, 'second');
    assert.equal(decide(policies, request({ action: 'refund', context: { team: 'a' } })).policyId, 'third');
    assert.equal(decide(policies, request({ action: 'refund', context: { team: 'b' } })).policyId, null);
  });

  test('a params key shadowing action is what the index looks up', () => {
    const policies = [policy('p', [{ match: { action: 'read' }, decision: 'auto_approve' }])];
    assert.equal(decide(policies, request({ action: 'delete', params: { action: 'read' } })).decision, 'auto_approve');
    assert.equal(decide(policies, request({ action: 'read', params: { action: 'delete' } })).decision, 'route_to_human');
  });

  test('types stay strict through the index: 1 is not "1", false is not 0', () => {
    const policies = [
      policy('n', [{ match: { level: 1 }, decision: 'auto_approve' }], { priority: 1 }),
      policy('b', [{ match: { flag: false }, decision: 'auto_deny' }], { priority: 2 }),
    ];
    assert.equal(decide(policies, request({ params: { level: '1' } })).policyId, null);
    assert.equal(decide(policies, request({ params: { level: 1 } })).policyId, 'n');
    assert.equal(decide(policies, request({ params: { flag: 0 } })).policyId, null);
    assert.equal(decide(policies, request({ params: { flag: false } })).policyId, 'b');
  });

  test('on 3,000 random requests against 40 random policies the indexed and the linear evaluation agree', () => {
    let seed = 12345;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const actions = ['a', 'b', 'c', 'd'];
    const paths = [
      'action',
      'urgency',
      'kind',
      'params.kind',
      'context.team',
      'n',
      'context.level',
      'budgets.day.spendUsd',
      'budgets.team.level',
      'budgets.day.level',
    ];
    const values = ['a', 'b', 'x', 'y', 1, 2, true, null];
    const matcher = (): Matcher =>
      pick<() => Matcher>([
        () => pick(values),
        () => ({ $in: [pick(['a', 'b', 'x', 1]), pick(['c', 'y', 2])] }),
        () => ({ $gte: 1 }),
        () => ({ $regex: '^[ab]' }),
        () => ({ $in: ['a'], $regex: 'a' }),
      ])();
    const policies = Array.from({ length: 40 }, (_, k) =>
      policy(
        `p${k}`,
        Array.from({ length: 1 + Math.floor(random() * 3) }, () => ({
          match: Object.fromEntries(Array.from({ length: 2 + Math.floor(random() * 2) }, () => [pick(paths), matcher()])),
          decision: 'auto_approve' as const,
        })),
        { priority: Math.floor(random() * 10), enabled: random() > 0.1 },
      ),
    );
    const set = compilePolicySet(policies, allSafe);
    let matched = 0;
    for (let i = 0; i < 3000; i += 1) {
      const params: Record<string, unknown> = {};
      if (random() < 0.5) params.kind = pick(values);
      if (random() < 0.5) params.n = pick(values);
      if (random() < 0.1) params.action = pick(actions);
      const req = request({
        action: pick(actions),
        urgency: pick(['low', 'a', 'b']),
        params,
        context: random() < 0.7 ? { team: pick(values), level: pick(values) } : {},
        ...(random() < 0.9 && { budget: { day: { spendUsd: pick(values), level: pick(values) }, ...(random() < 0.5 && { team: { level: pick(values) } }) } }),
      });
      const got = evaluatePolicies(set, req);
      const expected = linearDecision(set, req);
      assert.deepEqual([got.policyId, got.ruleIndex], expected, JSON.stringify(req));
      if (expected[0] !== null) matched += 1;
    }
    assert.ok(matched > 300 && matched < 2700, `the random set must exercise both outcomes (${matched} matched)`);
  });
});

describe('policy engine: decisions as the request row stores them', () => {
  test("a rule's decision is one frozen object for every request it decides, and its stored text is its canonical JSON, written once", () => {
    const set = compilePolicySet(
      [policy('p', [{ match: { action: 'deploy' }, decision: 'route_to_human', approvers: ['ops'], quorum: { approvals: 2, denials: 1, groups: [] } }])],
      allSafe,
    );
    const first = evaluatePolicies(set, request({ params: { n: 1 } }));
    assert.equal(evaluatePolicies(set, request({ params: { n: 2 } })), first);
    assert.ok(Object.isFrozen(first));
    assert.throws(() => {
      (first as { decision: string }).decision = 'auto_approve';
    }, TypeError);
    const unmatched = evaluatePolicies(set, request({ action: 'read' }));
    assert.equal(unmatched.decision, 'route_to_human');
    assert.ok(Object.isFrozen(unmatched));
    for (const decision of [first, unmatched]) {
      assert.equal(storedDecisionText(decision), canonicalJson(decision));
      assert.equal(storedDecisionText(decision), storedDecisionText(decision));
    }
    // A decision made from another (a budget's soft breach routes a request a rule approves) is not the rule's: its own text.
    const changed = { ...first, decision: 'route_to_agent' as const };
    assert.equal(storedDecisionText(changed), canonicalJson(changed));
    assert.notEqual(storedDecisionText(changed), storedDecisionText(first));
  });
});
