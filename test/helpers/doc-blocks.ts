// The fenced code blocks of README.md and docs/*.md, as the documentation tests read them:
// test/docs/code-blocks.test.ts checks every block of a language; test/docs/walkthrough.test.ts
// runs the blocks of named sections as a newcomer pastes them.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const DOCS_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A fenced block: its file, the line of its opening fence, its language ('' when none), its text, and the heading it is under. */
export interface DocBlock { file: string; line: number; lang: string; code: string; heading: string }

/** Every fenced block of the files (default: README.md and docs/*.md), in order. */
export function docBlocks(files = ['README.md', ...readdirSync(`${DOCS_ROOT}docs`).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]): DocBlock[] {
  return files.flatMap((file) => {
    const text = readFileSync(`${DOCS_ROOT}${file}`, 'utf8');
    const out: DocBlock[] = [];
    // A block in a list item is indented: its lines are read without the fence's indentation.
    const re = /^( *)```(\w*)[^\n]*\n([\s\S]*?)^\1```$/gm;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      const before = text.slice(0, m.index);
      const heading = [...before.matchAll(/^#+ (.+)$/gm)].at(-1)?.[1] ?? '';
      const indent = m[1]!;
      const code = indent ? m[3]!.split('\n').map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l)).join('\n') : m[3]!;
      out.push({ file, line: before.split('\n').length, lang: m[2]!, code, heading });
    }
    return out;
  });
}

/** The n-th block (default the first) of that language under that heading of the file; throws when there is none. */
export function sectionBlock(file: string, heading: string, lang: string, n = 0): DocBlock {
  const found = docBlocks([file]).filter((b) => b.heading === heading && b.lang === lang)[n];
  if (!found) throw new Error(`${file}: no ${lang || 'plain'} block #${n} under "${heading}"`);
  return found;
}

export const where = (b: DocBlock) => `${b.file}:${b.line}`;
