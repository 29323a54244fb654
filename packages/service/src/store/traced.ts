/**
 * The store as seen from a traced piece of work (a pipeline step, a settlement or retention pass): every
 * method call (one transaction, or one read) becomes a client span "store <method>" under `span`. With
 * tracing off (`span` not recording) it is the store itself: nothing is wrapped.
 */
import type { Store } from "./types.ts";
import { traced, type TraceSpan } from "../telemetry/trace.ts";

/** Which database a store speaks to, for the spans' db.system.name. */
export type StoreSystem = "sqlite" | "postgresql";

/** The database of a service's configuration (DATABASE_URL: PostgreSQL, else the SQLite file). */
export function storeSystem(config: { databaseUrl?: string | undefined }): StoreSystem {
  return config.databaseUrl !== undefined && config.databaseUrl !== "" ? "postgresql" : "sqlite";
}

export function tracedStore(store: Store, span: TraceSpan, system?: StoreSystem): Store {
  if (!span.recording) return store;
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function" || typeof property !== "string" || property === "close") return value;
      const method = value as (...args: unknown[]) => unknown;
      return (...args: unknown[]) =>
        traced(
          span,
          `store ${property}`,
          (_: undefined, child) => {
            child.set("db.system.name", system);
            child.set("db.operation.name", property);
            return method.apply(target, args);
          },
          undefined,
          // A call to a database is a client span (OpenTelemetry's database conventions).
          "client",
        );
    },
  });
}

/** The service's store as seen from `span`'s work (the store itself with tracing off). */
export function serviceStore(service: { store: Store; config: { databaseUrl?: string | undefined } }, span: TraceSpan): Store {
  return span.recording ? tracedStore(service.store, span, storeSystem(service.config)) : service.store;
}
