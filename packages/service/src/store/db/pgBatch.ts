/**
 * A batch of statements as ONE exchange of PostgreSQL's extended protocol, run through node-postgres as a custom
 * query (pg's "submittable" interface: pg-cursor and pg-query-stream use it): for each statement Parse (once per
 * connection: named statements), Bind, Describe, Execute, then a single Sync, all written at once (corked). The
 * server runs them as one implicit transaction, committed at the Sync; after an error it skips the rest and the
 * Sync rolls everything back (PostgreSQL docs, "Pipelining" and "Extended Query"). So a batch is one round trip
 * and one transaction, with none of a BEGIN, a COMMIT or a Sync per statement: what costs this process CPU is
 * the messages themselves (docs/scale.md has the figures).
 *
 * node-postgres calls handle* as the server's answers arrive (its Client routes them to the active query); a
 * ParseComplete is recorded by the Client under the query's `name`/`text`, which here are those of the oldest
 * statement still being parsed.
 */
import type pg from "pg";
import Result from "pg/lib/result.js";
import utils from "pg/lib/utils.js";

/** What of pg's Connection a batch writes with (lib/connection.js). */
interface Connection {
  stream: { cork(): void; uncork(): void };
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  parse(m: { text: string; name: string; types: unknown[] }): void;
  bind(m: { statement: string; values: unknown[]; valueMapper: unknown }): void;
  describe(m: { type: "P"; name: string }): void;
  execute(m: { portal: string; rows: number }): void;
  sync(): void;
  sendCopyFail(message: string): void;
  on(event: "parseComplete", listener: () => void): void;
  off(event: "parseComplete", listener: () => void): void;
}

export interface NamedStatement {
  name: string;
  text: string;
  values: unknown[];
}

type Done = (err: Error | null, rows?: unknown[][]) => void;

export class PgBatch {
  /** Called once: the rows of each statement, or the first error (then nothing of the batch was committed). */
  callback: Done;
  readonly #statements: readonly NamedStatement[];
  readonly #types: pg.CustomTypesConfig;
  readonly #rows: unknown[][] = [];
  #result: InstanceType<typeof Result> | undefined;
  /** Statements whose Parse was sent and not yet answered, oldest first. */
  readonly #parsing: NamedStatement[] = [];
  #connection: Connection | undefined;
  readonly #parsed = () => {
    this.#parsing.shift();
  };

  constructor(statements: readonly NamedStatement[], types: pg.CustomTypesConfig, callback: Done) {
    this.#statements = statements;
    this.#types = types;
    this.callback = callback;
  }

  /** For the Client's ParseComplete handler: the statement being parsed. */
  get name(): string | undefined {
    return this.#parsing[0]?.name;
  }

  get text(): string | undefined {
    return this.#parsing[0]?.text;
  }

  submit(connection: Connection): null {
    this.#connection = connection;
    // After the Client's own ParseComplete handler (registered when it connected), which reads name and text.
    connection.on("parseComplete", this.#parsed);
    connection.stream.cork();
    try {
      for (const st of this.#statements) {
        if (connection.parsedStatements[st.name] === undefined && connection.submittedNamedStatements[st.name] === undefined) {
          connection.parse({ text: st.text, name: st.name, types: [] });
          connection.submittedNamedStatements[st.name] = st.text;
          this.#parsing.push(st);
        }
        connection.bind({ statement: st.name, values: st.values, valueMapper: utils.prepareValue });
        connection.describe({ type: "P", name: "" });
        connection.execute({ portal: "", rows: 0 });
      }
      connection.sync();
    } finally {
      connection.stream.uncork();
    }
    return null;
  }

  handleRowDescription(msg: { fields: unknown[] }): void {
    this.#result = new Result(undefined, this.#types);
    this.#result.addFields(msg.fields);
  }

  handleDataRow(msg: { fields: unknown[] }): void {
    this.#result!.rows.push(this.#result!.parseRow(msg.fields));
  }

  handleCommandComplete(): void {
    this.#rows.push(this.#result?.rows ?? []);
    this.#result = undefined;
  }

  handleEmptyQuery(): void {
    this.handleCommandComplete();
  }

  handlePortalSuspended(): void {}

  handleCopyInResponse(connection: Connection): void {
    connection.sendCopyFail("a batch copies nothing");
  }

  handleCopyData(): void {}

  /** The server skips the rest up to the Sync: statements never parsed are not known to it. */
  handleError(err: Error): void {
    this.#end();
    for (const st of this.#parsing.splice(0)) delete this.#connection?.submittedNamedStatements[st.name];
    this.callback(err);
  }

  handleReadyForQuery(): void {
    this.#end();
    this.callback(null, this.#rows);
  }

  #end(): void {
    this.#connection?.off("parseComplete", this.#parsed);
  }
}
