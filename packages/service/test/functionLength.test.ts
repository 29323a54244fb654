/**
 * No function in src/ longer than 100 lines (ARCHITECTURE.md): a subsystem is a set of named steps, never one
 * closure of hundreds of lines. A function is measured from its first line to its last, nested functions included
 * (a factory returning an object of closures counts them all: that is the closure the rule is about). Data tables
 * written as a function (the migrations' list of SQL) are the only exceptions, named below.
 */
import { expect } from "chai";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const SRC = join(dirname(fileURLToPath(import.meta.url)), "..", "src");
const MAX_LINES = 100;

/** Functions that are data tables: "file:name" -> why. */
const DATA_TABLES: Readonly<Record<string, string>> = {
  "store/migrations.ts:sharedMigrations": "the schema's migrations in order, one SQL text per step (per dialect)",
};

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** A function's name as a reader finds it: its own, or the variable or property it is assigned to. */
function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText();
  if (ts.isCallExpression(parent)) return `${parent.expression.getText()}(…)`;
  return "<anonymous>";
}

interface LongFunction {
  where: string;
  lines: number;
}

/** The functions of one source text longer than `max` lines, as "file:name". */
function longFunctions(file: string, text: string, max: number): LongFunction[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > max) found.push({ where: `${file}:${nameOf(node as ts.FunctionLikeDeclaration)}`, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("function length", function () {
  it(`no function in src/ is longer than ${MAX_LINES} lines, outside the named data tables`, function () {
    const files = sources(SRC);
    expect(files.length).to.be.greaterThan(100); // the scan found the sources
    const long = files.flatMap((file) => longFunctions(relative(SRC, file), readFileSync(file, "utf8"), MAX_LINES));
    const tables = long.filter((f) => f.where in DATA_TABLES).map((f) => f.where);
    expect(tables.sort(), "a data table named here that is no longer long: remove it from DATA_TABLES").to.deep.equal(Object.keys(DATA_TABLES).sort());
    const offenders = long.filter((f) => !(f.where in DATA_TABLES)).map((f) => `${f.where} (${f.lines} lines)`);
    expect(offenders, "split these into named steps (ARCHITECTURE.md)").to.deep.equal([]);
  });

  it("the check finds a long function, named by its variable", function () {
    const body = Array.from({ length: 101 }, (_, i) => `  const x${i} = ${i};`).join("\n");
    const text = `export const big = () => {\n${body}\n};\nfunction small() { return 1; }\n`;
    expect(longFunctions("x.ts", text, MAX_LINES)).to.deep.equal([{ where: "x.ts:big", lines: 103 }]);
  });
});
