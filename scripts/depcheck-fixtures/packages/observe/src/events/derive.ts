export const derive = (value: number): number => value + 1;
