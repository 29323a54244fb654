/**
 * The layers of src/ (ARCHITECTURE.md): an import only goes down or stays level. The layers are declared once, in
 * ARCHITECTURE.md's `layers` block, and read from there; every relative import of src/ (type-only ones and
 * `import("…")` types too) is placed by its two ends' units (a top-level folder or file of src/).
 */
import { expect } from "chai";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SRC = join(ROOT, "src");
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+"(\.{1,2}\/[^"]+)"/g;
const DYNAMIC = /import\(\s*"(\.{1,2}\/[^"]+)"\s*\)/g;

/** Imports allowed to go up, "from -> to" (src-relative files) -> why. ARCHITECTURE.md lists the same (at most five). */
const EXCEPTIONS: Readonly<Record<string, string>> = {};

interface Layers {
  names: string[];
  /** unit -> index of its layer (0 = the bottom). */
  levelOf: Map<string, number>;
}

/** The `layers` block of ARCHITECTURE.md: one line per layer, bottom first, "name unit unit ...". */
function declaredLayers(markdown: string): Layers {
  const block = /```layers\n([\s\S]*?)```/.exec(markdown);
  if (!block) throw new Error("ARCHITECTURE.md has no ```layers block");
  const names: string[] = [];
  const levelOf = new Map<string, number>();
  for (const line of block[1]!.split("\n").filter((l) => l.trim() !== "")) {
    const [name, ...units] = line.trim().split(/\s+/);
    for (const unit of units) {
      if (levelOf.has(unit)) throw new Error(`ARCHITECTURE.md places ${unit} in two layers`);
      levelOf.set(unit, names.length);
    }
    names.push(name!);
  }
  return { names, levelOf };
}

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** A src-relative path's unit: its top-level folder, or its file name without .ts at the top. */
function unitOf(path: string): string {
  return path.includes("/") ? path.split("/")[0]! : path.replace(/\.ts$/, "");
}

/** Every relative import in `files` (src-relative), as [from, to]. */
function imports(files: ReadonlyMap<string, string>): Array<[string, string]> {
  const found: Array<[string, string]> = [];
  for (const [file, text] of files) {
    for (const m of [...text.matchAll(IMPORT), ...text.matchAll(DYNAMIC)]) found.push([file, normalize(join(dirname(file), m[1]!))]);
  }
  return found;
}

/** What breaks the layering: units the table does not place, and imports that go up (outside the exceptions). */
function breaches(layers: Layers, files: ReadonlyMap<string, string>, exceptions: Readonly<Record<string, string>>): string[] {
  const found = new Set<string>();
  for (const file of files.keys()) if (!layers.levelOf.has(unitOf(file))) found.add(`${unitOf(file)} (${file}) is in no layer: place it in ARCHITECTURE.md's layers block`);
  for (const [from, to] of imports(files)) {
    const low = layers.levelOf.get(unitOf(from));
    const high = layers.levelOf.get(unitOf(to));
    if (low === undefined || high === undefined || high <= low || `${from} -> ${to}` in exceptions) continue;
    found.add(`${from} (${layers.names[low]}) imports ${to} (${layers.names[high]}): an import only goes down the layers (ARCHITECTURE.md)`);
  }
  return [...found];
}

describe("layers", function () {
  const layers = declaredLayers(readFileSync(join(ROOT, "ARCHITECTURE.md"), "utf8"));

  it("ARCHITECTURE.md declares five layers, bottom to top", function () {
    expect(layers.names).to.deep.equal(["domain", "infrastructure", "core", "doors", "assembly"]);
  });

  it("every import in src/ goes down or stays level, and every unit has a layer", function () {
    const files = new Map(sources(SRC).map((file) => [relative(SRC, file), readFileSync(file, "utf8")]));
    expect(files.size).to.be.greaterThan(100); // the scan found the sources
    expect(imports(files).length).to.be.greaterThan(500);
    expect(breaches(layers, files, EXCEPTIONS)).to.deep.equal([]);
  });

  it("each exception is listed in ARCHITECTURE.md too, and there are at most five", function () {
    const markdown = readFileSync(join(ROOT, "ARCHITECTURE.md"), "utf8");
    expect(Object.keys(EXCEPTIONS).length).to.be.at.most(5);
    for (const exception of Object.keys(EXCEPTIONS)) expect(markdown).to.include(exception);
  });

  it("the check finds an import that goes up, and a unit with no layer", function () {
    const files = new Map([
      ["errors.ts", 'import { RpcError } from "./rpc/dispatch.ts";\n'],
      ["rpc/dispatch.ts", 'import type { RpcError } from "../errors.ts";\n'],
      ["elsewhere/x.ts", "export const x = 1;\n"],
    ]);
    expect(breaches(layers, files, {})).to.deep.equal([
      "elsewhere (elsewhere/x.ts) is in no layer: place it in ARCHITECTURE.md's layers block",
      "errors.ts (domain) imports rpc/dispatch.ts (doors): an import only goes down the layers (ARCHITECTURE.md)",
    ]);
    expect(breaches(layers, files, { "errors.ts -> rpc/dispatch.ts": "for the test" })).to.have.length(1);
  });
});
