// The two modules of node-postgres a batch uses (its package exports lib/*; @types/pg does not describe them).
declare module "pg/lib/result.js" {
  import type pg from "pg";
  export default class Result {
    constructor(rowMode: "array" | undefined, types: pg.CustomTypesConfig);
    rows: unknown[];
    addFields(fields: unknown[]): void;
    parseRow(fields: unknown[]): unknown;
  }
}
declare module "pg/lib/utils.js" {
  const utils: { prepareValue(value: unknown): unknown };
  export default utils;
}
