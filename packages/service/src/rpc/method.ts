/**
 * A JSON-RPC method: its wire name, the zod schema of its params, and a handler that never knows which
 * dialect called it. One file per method under src/methods/.
 */
import type { z } from "zod";
import type { CallContext } from "../context.ts";

export interface MethodDefinition<P = unknown> {
  readonly name: string;
  /**
   * Schema of `params`. Methods that take none use a schema accepting only an omitted field or [] (the spec:
   * "params: none (field omitted)"); anything else is INVALID_PARAMS.
   */
  readonly params: z.ZodType<P>;
  handler(params: P, ctx: CallContext): Promise<unknown>;
}

/** Keeps the param type of each definition while letting the registry hold them together. */
export function defineMethod<P>(definition: MethodDefinition<P>): MethodDefinition<P> {
  return definition;
}
