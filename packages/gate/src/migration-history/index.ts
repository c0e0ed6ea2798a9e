// Frozen migration history (steps.ts): what the gate's steps 0001–0009 ran when they shipped,
// importing no feature code.
export { gateHistory } from './steps.ts';
