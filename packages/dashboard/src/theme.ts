/**
 * The colour scheme: the system's (`prefers-color-scheme`) until the person picks one with the
 * toggle, which is kept in localStorage (a display preference, no credential). The choice is the
 * `data-theme` attribute of <html>, which styles.css reads; charts read their colours from the CSS
 * variables and redraw when the scheme changes.
 */
import { useSyncExternalStore } from 'react';

export type Theme = 'light' | 'dark';

const STORAGE_KEY = 'vigil.theme';
const systemDark = () => window.matchMedia('(prefers-color-scheme: dark)');
const listeners = new Set<() => void>();

function stored(): Theme | null {
  const value = localStorage.getItem(STORAGE_KEY);
  return value === 'light' || value === 'dark' ? value : null;
}

export function currentTheme(): Theme {
  return stored() ?? (systemDark().matches ? 'dark' : 'light');
}

function apply(): void {
  document.documentElement.dataset.theme = currentTheme();
  for (const listener of listeners) listener();
}

/** Sets the scheme at start-up and follows the system's while the person has not picked one. */
export function startTheme(): void {
  apply();
  systemDark().addEventListener('change', () => {
    if (stored() === null) apply();
  });
}

export function setTheme(theme: Theme): void {
  localStorage.setItem(STORAGE_KEY, theme);
  apply();
}

/** The scheme in force, re-rendering the component when it changes. */
export function useTheme(): Theme {
  return useSyncExternalStore((listener) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, currentTheme);
}

/** A colour the stylesheet defines for the scheme in force: `cssColor('--chart-1')`. */
export function cssColor(variable: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(variable).trim();
}
