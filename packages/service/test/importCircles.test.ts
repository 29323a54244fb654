/**
 * No import circles in src/: every relative import (type-only ones too, and dynamic `import("./x.ts")` types)
 * forms a graph without cycles, so each module can be read, loaded and tested after the ones it needs.
 */
import { expect } from "chai";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";

const SRC = join(dirname(fileURLToPath(import.meta.url)), "..", "src");
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+"(\.{1,2}\/[^"]+)"/g;
const DYNAMIC = /import\(\s*"(\.{1,2}\/[^"]+)"\s*\)/g;

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** The module graph: each file and the files it imports (relative paths only). */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    const targets = [...text.matchAll(IMPORT), ...text.matchAll(DYNAMIC)].map((m) => normalize(join(dirname(file), m[1]!)));
    graph.set(file, targets);
  }
  return graph;
}

/** The graph's cycles, one per strongly connected component of more than one file (or a file importing itself). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.map((f) => relative(SRC, f)).sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe("import circles", function () {
  it("src/ has none", function () {
    const graph = importGraph(sources(SRC));
    expect(graph.size).to.be.greaterThan(100); // the scan found the sources
    expect(cycles(graph)).to.deep.equal([]);
  });

  it("the check finds a circle (two files importing each other)", function () {
    const a = join(SRC, "a.ts");
    const b = join(SRC, "b.ts");
    expect(cycles(new Map([[a, [b]], [b, [a]]]))).to.deep.equal([["a.ts", "b.ts"]]);
  });
});
