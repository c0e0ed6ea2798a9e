// A test kit.
export const TEST_KEY = 'gk_fixture_key_0123456789';
