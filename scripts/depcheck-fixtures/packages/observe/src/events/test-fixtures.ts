// A feature's test kit.
export const sampleEvent = { type: 'session_started' };
