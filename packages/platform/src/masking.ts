// Masking of values (docs/guide/redaction.md): what people typed into an agent — e-mail addresses, card
// numbers, secrets — replaced by typed markers before anything is hashed or stored. Pure: the
// services compile a Masker from their configuration (and observe from its admin rules) and run
// it once per event or request, before canonical JSON.
import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from './crypto.ts';
import { judgePattern } from './regex-safety.ts';

/** The built-in detectors, each its marker's type. */
export const MASK_DETECTORS = ['email', 'phone', 'card', 'iban', 'secret'] as const;
export type MaskDetector = (typeof MASK_DETECTORS)[number];

/** A marker's type: what replaced text was (lower case, so markers stay one recognisable shape). */
export const maskLabel = z
  .string()
  .regex(/^[a-z0-9_-]{1,40}$/, 'label must be 1 to 40 of a-z, 0-9, _ and -')
  .refine((label) => label !== 'error', 'label "error" is reserved');

const PATH_SEGMENT = /^(?:\*|[^.[\]*]+)$/;

/** `payload.user.email`, `metadata.*.ssn`, `payload.messages[*].content`: the segments, `[x]` read as `.x`. */
export function pathSegments(path: string): string[] | null {
  const segments = path.replace(/\[([^\]]*)\]/g, '.$1').split('.');
  return segments.length >= 2 && segments.every((segment) => PATH_SEGMENT.test(segment)) ? segments : null;
}

const REGEX_FLAGS = /^(?!.*(.).*\1)[imsu]*$/;

/** A rule's path: the value there is replaced whole. */
export const maskPath = z
  .string()
  .max(500)
  .refine((path) => pathSegments(path) !== null, {
    message: 'path must be dot-separated keys from its root (payload, metadata, params or context); `*` or `[*]` matches any key or index',
  });

/** A rule's regular expression: refused when recheck finds it can backtrack catastrophically (as policy patterns are). */
export const maskPattern = z
  .string()
  .min(1)
  .max(1000)
  .superRefine((pattern, ctx) => {
    const verdict = judgePattern(pattern);
    if (!verdict.safe) ctx.addIssue({ code: 'custom', message: `pattern is refused: ${verdict.reason}` });
  });

export const maskFlags = z.string().regex(REGEX_FLAGS, 'flags must be distinct letters of i, m, s, u');

/** The fields of each kind of matcher, for schemas that add their own (observe's admin rules). */
export const MASK_MATCHER_SHAPES = {
  path: { kind: z.literal('path'), path: maskPath, label: maskLabel.default('field') },
  regex: { kind: z.literal('regex'), pattern: maskPattern, flags: maskFlags.default(''), label: maskLabel.default('pattern') },
};

/** What a rule matches: a value at a path (replaced whole), or a regular expression in any text. */
export const maskMatcherSchema = z.discriminatedUnion('kind', [z.object(MASK_MATCHER_SHAPES.path), z.object(MASK_MATCHER_SHAPES.regex)]);
export type MaskMatcher = z.output<typeof maskMatcherSchema>;

/** A rule as a Masker takes it: its id is what `redactions` entries name. */
export type MaskSpec = MaskMatcher & { id: string };

/** How many replacements one rule (a detector's name or a rule's id) made in a value. */
export interface MaskCount {
  id: string;
  count: number;
}

/** A rule failed on a value (it threw, or what it left no longer fits its schema): the value must not be stored. */
export class MaskFailure extends Error {
  constructor(
    readonly id: string,
    reason: string,
  ) {
    super(`${id} failed: ${reason}`);
  }
}

// ---- detectors ----

function digitsOf(text: string): string {
  return text.replace(/\D/g, '');
}

function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = digits.length - 1, double = false; i >= 0; i--, double = !double) {
    let d = digits.charCodeAt(i) - 48;
    if (double && (d *= 2) > 9) d -= 9;
    sum += d;
  }
  return sum % 10 === 0;
}

/** ISO 13616: the country and check digits moved to the end, letters as 10–35, the number mod 97 is 1. */
function ibanValid(compact: string): boolean {
  if (compact.length < 15 || compact.length > 34) return false;
  const moved = compact.slice(4) + compact.slice(0, 4);
  let remainder = 0;
  for (const char of moved) {
    const code = char.charCodeAt(0);
    const value = code >= 65 ? code - 55 : code - 48;
    remainder = value >= 10 ? (remainder * 100 + value) % 97 : (remainder * 10 + value) % 97;
  }
  return remainder === 1;
}

/** The length of the IBAN at the start of a match, the whole or without its last space-separated group (text that followed it). */
function ibanLength(match: string): number | null {
  if (ibanValid(match.replace(/ /g, ''))) return match.length;
  const lastSpace = match.lastIndexOf(' ');
  return lastSpace > 0 && ibanValid(match.slice(0, lastSpace).replace(/ /g, '')) ? lastSpace : null;
}

interface Scanner {
  id: string;
  label: string;
  /** Cheap test that the text may hold a match at all, given how many digits it has. */
  mayMatch?: (text: string, digits: number) => boolean;
  regex: RegExp;
  /** The length of the match to replace (from its start), or null when the match is not one (a failed checksum). */
  accept?: (match: string) => number | null;
}

const digitCount = (min: number) => (match: string) => {
  const count = digitsOf(match).length;
  return count >= min ? match.length : null;
};

/**
 * The detectors' patterns. Every one is judged safe by recheck (redaction.test.ts), and bounded:
 * a match scans a bounded span from where it starts.
 */
export const DETECTOR_PATTERNS: Record<MaskDetector, readonly RegExp[]> = {
  email: [/[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){1,8}(?![A-Za-z0-9-])/g],
  // International (+ and 7–15 digits) or North American ((555) 123-4567, 555-123-4567) numbers:
  // bare digit runs are ids and times far more often than phone numbers.
  phone: [/(?<![\w+.-])(?:\+\d[\d ().-]{5,22}\d|\(\d{3}\) ?\d{3}[-. ]\d{4}|\d{3}[-.]\d{3}[-.]\d{4})(?![\w-]|\.\d)/g],
  // 13–19 digits starting 2–6 (the card networks), spaces or dashes between, Luhn-checked.
  card: [/(?<!\d)[2-6]\d(?:[ -]?\d){11,17}(?!\d)/g],
  iban: [/(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])/g],
  secret: [
    // OpenAI and Anthropic keys (sk-…, sk-proj-…, sk-ant-…).
    /\bsk-[A-Za-z0-9_-]{20,}/g,
    // AWS access key ids.
    /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g,
    // GitHub tokens.
    /\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b/g,
    // Bearer tokens (16 characters at least: "Bearer authentication" is prose).
    /\b[Bb]earer[ \t]+[A-Za-z0-9._~+/-]{16,}=*/g,
    // Private key blocks; one cut short runs to the end of the text.
    /-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[^]*?(?:-----END [A-Z ]{0,40}PRIVATE KEY-----|$)/g,
  ],
};

/** Text none of whose secret patterns can match lacks all of these. */
const SECRET_HINT = /sk-|AKIA|ASIA|gh[pousr]_|github_pat_|[Bb]earer|-----BEGIN/;

function countDigits(text: string): number {
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 48 && code <= 57) digits++;
  }
  return digits;
}

const DETECTOR_CHECKS: Record<MaskDetector, Pick<Scanner, 'mayMatch' | 'accept'>> = {
  // The last label of the domain is its top level: letters only.
  email: { mayMatch: (text) => text.includes('@'), accept: (match) => (/\.[A-Za-z]{2,24}$/.test(match) ? match.length : null) },
  phone: { mayMatch: (_text, digits) => digits >= 7, accept: (match) => (digitsOf(match).length <= 15 ? digitCount(7)(match) : null) },
  card: {
    mayMatch: (_text, digits) => digits >= 13,
    accept: (match) => {
      const digits = digitsOf(match);
      return digits.length >= 13 && digits.length <= 19 && luhnValid(digits) ? match.length : null;
    },
  },
  iban: { mayMatch: (_text, digits) => digits >= 2, accept: ibanLength },
  secret: { mayMatch: (text) => SECRET_HINT.test(text) },
};

function detectorScanners(detector: MaskDetector): Scanner[] {
  return DETECTOR_PATTERNS[detector].map((regex) => ({
    id: detector,
    label: detector,
    regex: new RegExp(regex.source, regex.flags),
    ...DETECTOR_CHECKS[detector],
  }));
}

// ---- paths ----

interface PathNode {
  children: Map<string, PathNode>;
  /** The rule whose path ends here (the first given wins). */
  spec?: MaskSpec & { kind: 'path' };
}

const NO_NODES: readonly PathNode[] = [];

function nextNodes(nodes: readonly PathNode[], key: string): readonly PathNode[] {
  if (nodes.length === 0) return NO_NODES;
  let next: PathNode[] | undefined;
  for (const node of nodes) {
    const exact = node.children.get(key);
    const any = node.children.get('*');
    if (exact !== undefined) (next ??= []).push(exact);
    if (any !== undefined) (next ??= []).push(any);
  }
  return next ?? NO_NODES;
}

// ---- the redactor ----

export interface MaskerOptions {
  specs?: readonly MaskSpec[];
  detectors?: readonly MaskDetector[];
  /** With a key, markers carry the first 16 hex digits of HMAC-SHA256(key, value), so equal values stay joinable. */
  hmacKey?: string;
}

interface Found {
  start: number;
  end: number;
  scanner: Scanner;
}

/** The redaction of one set of roots: the roots (the same objects when nothing changed) and the rules that fired, by rule. */
export interface Masked<Roots> {
  roots: Roots;
  counts: MaskCount[];
}

/**
 * Compiled rules and detectors. `redact` walks JSON values: a value at a path rule's path is replaced
 * whole; in every other string (object keys too) the matches of the regex rules and detectors are
 * found on the original text, overlaps resolved (earliest first, then longest), and each replaced by
 * its marker — so no rule ever matches another's marker. Copy on write: unchanged values are the
 * caller's own.
 */
export class Masker {
  private readonly scanners: Scanner[];
  private readonly paths: PathNode = { children: new Map() };
  private readonly hasPaths: boolean;

  constructor(private readonly options: MaskerOptions) {
    const specs = options.specs ?? [];
    this.scanners = specs.flatMap((spec): Scanner[] =>
      spec.kind === 'regex' ? [{ id: spec.id, label: spec.label, regex: new RegExp(spec.pattern, `g${spec.flags}`) }] : [],
    );
    for (const detector of options.detectors ?? []) this.scanners.push(...detectorScanners(detector));
    let hasPaths = false;
    for (const spec of specs) {
      if (spec.kind !== 'path') continue;
      let node = this.paths;
      for (const segment of pathSegments(spec.path) ?? []) {
        let child = node.children.get(segment);
        if (child === undefined) node.children.set(segment, (child = { children: new Map() }));
        node = child;
      }
      node.spec ??= spec;
      hasPaths = true;
    }
    this.hasPaths = hasPaths;
  }

  /** False when there is nothing to apply: redact returns its input as it is. */
  get active(): boolean {
    return this.scanners.length > 0 || this.hasPaths;
  }

  /** The marker replacing `value` (text, or any JSON value a path rule replaces). */
  marker(label: string, value: unknown): string {
    if (this.options.hmacKey === undefined) return `[redacted:${label}]`;
    const text = typeof value === 'string' ? value : canonicalJson(value);
    return `[redacted:${label}:${createHmac('sha256', this.options.hmacKey).update(text).digest('hex').slice(0, 16)}]`;
  }

  /** Redacts each root (e.g. payload and metadata); throws MaskFailure when a rule fails. */
  mask<Roots extends Record<string, unknown>>(roots: Roots): Masked<Roots> {
    if (!this.active) return { roots, counts: [] };
    const counts = new Map<string, number>();
    const start = this.hasPaths ? [this.paths] : NO_NODES;
    const masked = this.walkObject(roots, start, counts) as Roots;
    const sorted = [...counts].map(([id, count]) => ({ id, count }));
    return { roots: masked, counts: sorted.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) };
  }

  /** A redactor of this one's rule or detector `rule` alone (to tell which of the rules that fired broke a value). */
  only(id: string): Masker {
    const detector = (MASK_DETECTORS as readonly string[]).includes(id) ? [id as MaskDetector] : [];
    return new Masker({
      specs: (this.options.specs ?? []).filter((spec) => spec.id === id),
      detectors: (this.options.detectors ?? []).filter((d) => detector.includes(d)),
      hmacKey: this.options.hmacKey,
    });
  }

  private walk(value: unknown, nodes: readonly PathNode[], counts: Map<string, number>): unknown {
    if (typeof value === 'string') return this.maskText(value, counts);
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) {
      let copy: unknown[] | undefined;
      for (let i = 0; i < value.length; i++) {
        const item = value[i] as unknown;
        const after = this.child(item, nextNodes(nodes, String(i)), counts);
        if (after !== item) (copy ??= value.slice())[i] = after;
      }
      return copy ?? value;
    }
    return this.walkObject(value as Record<string, unknown>, nodes, counts);
  }

  private walkObject(value: Record<string, unknown>, nodes: readonly PathNode[], counts: Map<string, number>): Record<string, unknown> {
    let copy: Record<string, unknown> | undefined;
    const keys = Object.keys(value);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const item = value[key];
      const after = this.child(item, nextNodes(nodes, key), counts);
      const newKey = this.maskText(key, counts);
      if (copy === undefined && (after !== item || newKey !== key)) {
        copy = {};
        for (let j = 0; j < i; j++) copy[keys[j]!] = value[keys[j]!];
      }
      if (copy !== undefined) {
        // Two keys redacted to the same marker keep both values.
        let unique = newKey;
        for (let n = 2; Object.hasOwn(copy, unique); n++) unique = `${newKey}#${n}`;
        copy[unique] = after;
      }
    }
    return copy ?? value;
  }

  private child(value: unknown, nodes: readonly PathNode[], counts: Map<string, number>): unknown {
    for (const node of nodes) {
      if (node.spec !== undefined && value !== undefined) {
        counts.set(node.spec.id, (counts.get(node.spec.id) ?? 0) + 1);
        return this.marker(node.spec.label, value);
      }
    }
    return this.walk(value, nodes, counts);
  }

  private maskText(text: string, counts: Map<string, number>): string {
    let found: Found[] | undefined;
    let digits = -1;
    for (const scanner of this.scanners) {
      if (scanner.mayMatch !== undefined && !scanner.mayMatch(text, digits < 0 ? (digits = countDigits(text)) : digits)) continue;
      try {
        const { regex } = scanner;
        regex.lastIndex = 0;
        for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
          if (match[0].length === 0) {
            regex.lastIndex++;
            continue;
          }
          const length = scanner.accept === undefined ? match[0].length : scanner.accept(match[0]);
          if (length !== null) (found ??= []).push({ start: match.index, end: match.index + length, scanner });
        }
      } catch (error) {
        throw new MaskFailure(scanner.id, (error as Error).message);
      }
    }
    if (found === undefined) return text;
    found.sort((a, b) => a.start - b.start || b.end - a.end);
    let out = '';
    let at = 0;
    for (const { start, end, scanner } of found) {
      if (start < at) continue;
      out += text.slice(at, start) + this.marker(scanner.label, text.slice(start, end));
      at = end;
      counts.set(scanner.id, (counts.get(scanner.id) ?? 0) + 1);
    }
    return out + text.slice(at);
  }
}

// ---- configuration ----

/** A rule of REDACTION_RULES_FILE: its matcher and an id (what `redactions` entries name). */
const fileEntrySchema = z.intersection(
  z.object({
    id: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'id must be 1 to 100 of A-Z, a-z, 0-9, _ . : and -')
      .refine((id) => !(MASK_DETECTORS as readonly string[]).includes(id), 'id must not be a detector name'),
  }),
  maskMatcherSchema,
);

export const MASK_DETECTORS_ALL = 'all';

/** What a service masks by configuration: REDACTION_RULES_FILE, REDACTION_DETECTORS and REDACTION_HMAC_KEY. */
export interface MaskingConfig {
  specs: MaskSpec[];
  detectors: MaskDetector[];
  hmacKey?: string;
}

/** The rules of a REDACTION_RULES_FILE's text (a JSON array); throws an Error naming the bad entry. */
export function parseMaskSpecs(text: string): MaskSpec[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`is not JSON (${(error as Error).message})`);
  }
  const parsed = z.array(fileEntrySchema).safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`[${issue.path.join('.')}]: ${issue.message}`);
  }
  const ids = new Set<string>();
  for (const spec of parsed.data) {
    if (ids.has(spec.id)) throw new Error(`id ${spec.id} is used twice`);
    ids.add(spec.id);
  }
  return parsed.data as MaskSpec[];
}

/** MASK_DETECTORS: a comma-separated list of detectors, or `all`. */
export const maskDetectorList = z.string().transform((raw, ctx) => {
  const items = raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  if (items.length === 1 && items[0] === MASK_DETECTORS_ALL) return [...MASK_DETECTORS];
  const unknown = items.filter((item) => !(MASK_DETECTORS as readonly string[]).includes(item));
  if (unknown.length > 0) {
    ctx.addIssue({ code: 'custom', message: `must be ${MASK_DETECTORS_ALL} or a comma-separated list of: ${MASK_DETECTORS.join(', ')}` });
    return z.NEVER;
  }
  return [...new Set(items)] as MaskDetector[];
});
