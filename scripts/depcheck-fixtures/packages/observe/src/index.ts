// The service's public entry, which its features must not import.
export const service = 'observe';
