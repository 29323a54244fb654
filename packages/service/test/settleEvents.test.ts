// The settlement pass's settle step (src/settlement/settle.ts) on a real SQLite store: what it says in the log
// about an ERC-20 op whose token charge is missing or unpaid is said when the op settles, not again each time a
// rescan of the reorg window (or another watcher) meets the op already settled.
import { expect } from "chai";
import type { Address, Hex } from "@paymaster/shared";
import { createLogger } from "../src/log.ts";
import { settleEvents, type SettleCounts } from "../src/settlement/settle.ts";
import { logKey, type UserOperationEventLog } from "../src/settlement/logs.ts";
import { storeBackends, type OpenedStore } from "./helpers/storeBackends.ts";
import { sponsorshipInput } from "./helpers/sponsorships.ts";

const USDC: Address = "0x2222222222222222222222222222222222222222";
const ERC20_PAYMASTER: Address = "0x3333333333333333333333333333333333333333";
const hash = (n: number): Hex => `0x${n.toString(16).padStart(64, "0")}`;

describe("settle step: an ERC-20 op's charge warnings once, not at every rescan", () => {
  let opened: OpenedStore;
  before(async () => {
    opened = await storeBackends("settle-events")[0]!.open();
  });
  after(async () => {
    await opened?.close();
  });

  for (const charge of ["missing", "unpaid"] as const) {
    it(`a ${charge} token charge: one warning when the op settles, none when the same event is met again`, async () => {
      const { store } = opened;
      const project = await store.createProject(`settle ${charge}`);
      const key = await store.createApiKey(project.id);
      const userOpHash = hash(charge === "missing" ? 1 : 2);
      const input = sponsorshipInput({ projectId: project.id, apiKeyId: key.apiKey.id }, { mode: "erc20", token: USDC, exchangeRate: 1n, maxTokenCost: 1n, userOpHash });
      const reserved = await store.reserveSponsorship(input);
      if (!reserved.ok) throw new Error("reservation refused");
      const event: UserOperationEventLog = {
        entryPoint: input.entryPoint,
        userOpHash,
        sender: input.sender,
        paymaster: ERC20_PAYMASTER,
        nonce: input.nonce,
        success: true,
        actualGasCost: 60n,
        actualGasUsed: 60n,
        txHash: hash(10),
        blockNumber: 10n,
        blockHash: hash(11),
        logIndex: 0,
      };
      const chargeOf = new Map(charge === "unpaid" ? [[logKey(event), { ...event, paymaster: ERC20_PAYMASTER, sender: input.sender, token: USDC, paid: false, tokenAmount: 5n }]] : []);
      const lines: { msg: string }[] = [];
      const logger = createLogger("warn", { write: (line: string) => void lines.push(JSON.parse(line)) });
      const counts: SettleCounts = { settled: 0, alreadySettled: 0, unmatched: 0 };
      const pass = () => settleEvents({ store, logger, network: input.network, events: [event], chargeOf, erc20Paymasters: new Set([ERC20_PAYMASTER.toLowerCase()]), price: { numerator: 3000n, denominator: 1n } }, counts);
      await pass();
      await pass();
      await pass();
      expect({ settled: counts.settled, alreadySettled: counts.alreadySettled }).to.deep.equal({ settled: 1, alreadySettled: 2 });
      const warned = charge === "missing" ? "ERC-20 sponsorship without a token charge event: settled with 0 tokens" : "the token charge failed (TokenChargeUnpaid)";
      expect(lines.map((l) => l.msg)).to.deep.equal([warned]);
      expect((await store.getSponsorship(reserved.record.id))?.status).to.equal("settled");
    });
  }
});
