export const notFound = 'not_found';
