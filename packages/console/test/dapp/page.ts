// A dapp's page, bundled for the browser by the dapp test (esbuild): viem's ERC-7677 paymaster client asks the
// paymaster's public endpoint for the stub and the final paymaster data of a user operation. The test calls
// window.sponsor(); the page also shows what happened, as a dapp would.
import { http } from "viem";
import { createPaymasterClient } from "viem/account-abstraction";

interface Input {
  endpoint: string;
  chainId: number;
  entryPointAddress: `0x${string}`;
  context: Record<string, unknown>;
  /** The operation's fields; gas values as decimal strings. */
  op: Record<string, string>;
  gas: Record<string, string>;
}

const GAS_FIELDS = new Set(["nonce", "callGasLimit", "verificationGasLimit", "preVerificationGas", "maxFeePerGas", "maxPriorityFeePerGas", "paymasterVerificationGasLimit", "paymasterPostOpGasLimit"]);
const toBigints = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, GAS_FIELDS.has(k) ? BigInt(v) : v]));
const plain = (value: unknown) => JSON.parse(JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v)));

function show(text: string, tone: "ok" | "error") {
  const status = document.getElementById("status")!;
  status.textContent = text;
  status.className = tone;
}

async function sponsor(input: Input) {
  const client = createPaymasterClient({ transport: http(input.endpoint) });
  const base = { ...toBigints(input.op), chainId: input.chainId, entryPointAddress: input.entryPointAddress, context: input.context };
  try {
    const stub: any = await client.getPaymasterStubData(base as any);
    const stubFields = stub.paymasterAndData
      ? { paymasterAndData: stub.paymasterAndData }
      : { paymaster: stub.paymaster, paymasterData: stub.paymasterData, paymasterVerificationGasLimit: stub.paymasterVerificationGasLimit, paymasterPostOpGasLimit: stub.paymasterPostOpGasLimit };
    const final = await client.getPaymasterData({ ...base, ...toBigints(input.gas), ...stubFields } as any);
    show(`Sponsored by ${stub.sponsor?.name ?? "the paymaster"}`, "ok");
    return { ok: true, stub: plain(stub), final: plain(final) };
  } catch (error) {
    const message = (error as { details?: string; shortMessage?: string; message: string }).details ?? (error as Error).message;
    show(`Not sponsored: ${message}`, "error");
    return { ok: false, error: message };
  }
}

(window as unknown as { sponsor: typeof sponsor }).sponsor = sponsor;
document.getElementById("status")!.textContent = "ready";
