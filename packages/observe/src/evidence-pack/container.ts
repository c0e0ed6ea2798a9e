/**
 * The pack's container (docs/audit.md, "Evidence packs"): JSON lines, one file a line,
 * `{"path": "...", "content": "<the file's text>"}`, in the order manifest.json, the parts in
 * manifest order, signatures.json. Every file is UTF-8 text; a digest is SHA-256 of its bytes.
 */
export interface PackFile {
  path: string;
  content: string;
}

export function writeContainer(files: readonly PackFile[]): string {
  return files.map((file) => `${JSON.stringify({ path: file.path, content: file.content })}\n`).join('');
}

/** The container's lines, each a file or, when the line is not one, the reason (by line number from 1). */
export function readContainer(text: string): { files: PackFile[]; unreadable: { line: number; reason: string }[] } {
  const files: PackFile[] = [];
  const unreadable: { line: number; reason: string }[] = [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  lines.forEach((line, i) => {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      unreadable.push({ line: i + 1, reason: 'not JSON' });
      return;
    }
    const { path, content } = (value ?? {}) as Record<string, unknown>;
    if (typeof path !== 'string' || typeof content !== 'string') unreadable.push({ line: i + 1, reason: 'not {path, content}' });
    else files.push({ path, content });
  });
  return { files, unreadable };
}
