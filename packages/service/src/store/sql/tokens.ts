/** The store's part for the ERC-20 token registry, per network: one token per address, one per symbol. */
import { isDeepStrictEqual } from "node:util";
import { getAddress, isAddress } from "viem/utils";
import * as dbRows from "../rows.ts";
import * as validation from "../validation.ts";
import { asciiLower, type Dialect } from "../db/types.ts";
import type { Store, Token } from "../types.ts";
import { isUnique, type SqlShared } from "./shared.ts";

function tokenQueries(d: Dialect) {
  const tokenColumns = `network, address, symbol, decimals, ${d.json("price_source")}, markup_bps, enabled`;
  return {
    deleteTokenSymbolElsewhere: `DELETE FROM tokens WHERE network = ? AND ${d.symbolKey} = ? AND address <> ?`,
    upsertToken: `INSERT INTO tokens (network, address, symbol, decimals, price_source, markup_bps, enabled, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (network, address) DO UPDATE SET
        symbol = excluded.symbol, decimals = excluded.decimals, price_source = excluded.price_source,
        markup_bps = excluded.markup_bps, enabled = excluded.enabled, updated_at = excluded.updated_at`,
    selectTokens: `SELECT ${tokenColumns} FROM tokens WHERE network = ? ORDER BY ${d.symbolOrder}`,
    selectTokenByAddress: `SELECT ${tokenColumns} FROM tokens WHERE network = ? AND address = ?`,
    selectTokenBySymbol: `SELECT ${tokenColumns} FROM tokens WHERE network = ? AND ${d.symbolKey} = ?`,
  };
}

export function tokenStore(s: SqlShared) {
  const { db } = s;
  const q = tokenQueries(db.dialect);
  return {
    /**
     * Inserts or updates the token at (network, address). A symbol names one token per network
     * (case-insensitively): upserting a different address under a symbol already used replaces that older row,
     * so re-seeding the registry from an edited configuration converges on the configuration. Two concurrent
     * upserts (PostgreSQL) may both miss the other's uncommitted row and collide on a unique index; the loser runs
     * again and then sees (and replaces) the winner's row.
     */
    async upsertToken(token: Token): Promise<void> {
      const { address: addr, priceSourceJson } = validation.validToken(token);
      const wanted: Token = { network: token.network, address: addr, symbol: token.symbol, decimals: token.decimals, priceSource: JSON.parse(priceSourceJson) as Token["priceSource"], markupBps: token.markupBps, enabled: token.enabled };
      await db.transaction(
        async (tx) => {
          // Unchanged: nothing is written, so the config version (which every write of tokens bumps, migration 18)
          // stays, and the replicas keep their lookups: each start of a replica upserts its configured tokens.
          const current = await tx.one<dbRows.TokenRow>(q.selectTokenBySymbol, [token.network, asciiLower(token.symbol)]);
          if (current !== undefined && isDeepStrictEqual(dbRows.toToken(current), wanted)) return;
          await tx.run(q.deleteTokenSymbolElsewhere, [token.network, asciiLower(token.symbol), addr]);
          await tx.run(q.upsertToken, [token.network, addr, token.symbol, token.decimals, priceSourceJson, token.markupBps, token.enabled, validation.nowSeconds()]);
        },
        (err) => isUnique(s, err),
      );
    },

    async listTokens(network: string): Promise<Token[]> {
      return (await db.all<dbRows.TokenRow>(q.selectTokens, [network])).map(dbRows.toToken);
    },

    async findToken(network: string, symbolOrAddress: string): Promise<Token | undefined> {
      if (typeof symbolOrAddress !== "string" || symbolOrAddress === "") return undefined;
      const row = isAddress(symbolOrAddress, { strict: false })
        ? await db.one<dbRows.TokenRow>(q.selectTokenByAddress, [network, getAddress(symbolOrAddress)])
        : await db.one<dbRows.TokenRow>(q.selectTokenBySymbol, [network, asciiLower(symbolOrAddress)]);
      return row && dbRows.toToken(row);
    },
  } satisfies Partial<Store>;
}
