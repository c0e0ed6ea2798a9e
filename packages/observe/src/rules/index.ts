// The rule kit: what alert rules and guardrails share (their CRUD routes and common fields).
export { registerRuleRoutes } from './routes.ts';
export { changedDefinition, changeRuleRecorded, type RuleTable } from './changes.ts';
export { ruleDescription, ruleHistoryPage, ruleName, ruleOutIdentity, ruleParams } from './schemas.ts';
