// The EIP-5792 capability answer the README documents is what a wallet client expects: served as a wallet's
// wallet_getCapabilities answer, viem's getCapabilities reads paymasterService support for the chain.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { createClient, custom } from "viem";
import { getCapabilities } from "viem/actions";

function documentedCapabilities(): Record<string, unknown> {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const match = /<!-- eip5792-capabilities -->\s*```json\s*([\s\S]*?)```/.exec(readme);
  if (!match) throw new Error("the README has no eip5792-capabilities block");
  return JSON.parse(match[1]!) as Record<string, unknown>;
}

describe("EIP-5792 capability (README)", () => {
  it("viem's getCapabilities reads paymasterService as supported on the documented chain", async () => {
    const answer = documentedCapabilities();
    const requests: string[] = [];
    const wallet = createClient({
      account: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
      transport: custom({
        async request({ method }: { method: string }) {
          requests.push(method);
          if (method === "wallet_getCapabilities") return answer;
          throw new Error(`unexpected ${method}`);
        },
      }),
    });
    const capabilities = await getCapabilities(wallet);
    expect(requests).to.deep.equal(["wallet_getCapabilities"]);
    expect(capabilities[31337]?.paymasterService).to.deep.equal({ supported: true });
    expect(Object.keys(capabilities)).to.deep.equal(["31337"]);
  });
});
