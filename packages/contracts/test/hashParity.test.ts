// The service signs what @paymaster/shared computes; the contracts verify what getHash computes. They must be
// the same function: checked over varied ops for both versions and both paymaster kinds.
import { expect } from "chai";
import { hexlify, randomBytes } from "ethers";
import { loadStack } from "./helpers/stack.ts";
import { VERSIONS, draftOp, offChainPaymasterHash, onChainPaymasterHash, type PaymasterKind, type TestOp } from "./helpers/userOps.ts";

/** Deterministic pseudo-random values so a failure reproduces. */
function* values(seed: number) {
  let x = BigInt(seed) * 0x9e3779b97f4a7c15n;
  for (;;) {
    x = (x * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
    yield x;
  }
}

function variedOps(base: TestOp, count: number): TestOp[] {
  const rng = values(7);
  const next = (bits: bigint) => rng.next().value! % (1n << bits);
  const ops: TestOp[] = [base];
  for (let i = 1; i < count; i++) {
    ops.push({
      ...base,
      sender: hexlify(randomBytes(20)),
      nonce: (next(64n) << 64n) | next(64n),
      initCode: i % 2 === 0 ? "0x" : hexlify(randomBytes(20 + (i * 7) % 90)),
      callData: hexlify(randomBytes((i * 13) % 300)),
      callGasLimit: next(40n),
      verificationGasLimit: next(40n),
      preVerificationGas: next(40n),
      maxFeePerGas: next(64n),
      maxPriorityFeePerGas: next(64n),
      paymasterVerificationGasLimit: next(40n),
      paymasterPostOpGasLimit: next(40n),
    });
  }
  // Extremes: every gas field at its widest (uint128 for v0.7 packing).
  const max128 = (1n << 128n) - 1n;
  ops.push({
    ...base,
    nonce: (1n << 256n) - 1n,
    callGasLimit: max128,
    verificationGasLimit: max128,
    preVerificationGas: max128,
    maxFeePerGas: max128,
    maxPriorityFeePerGas: max128,
    paymasterVerificationGasLimit: max128,
    paymasterPostOpGasLimit: max128,
  });
  return ops;
}

for (const version of VERSIONS) {
  for (const kind of ["verifying", "erc20"] as PaymasterKind[]) {
    describe(`hash parity ${kind} ${version}: @paymaster/shared == getHash`, () => {
      it("over 12 varied ops and extreme values", async () => {
        const stack = await loadStack();
        const paymaster = stack.v[version][kind];
        const address = await paymaster.getAddress();
        const base = await draftOp({ sender: stack.beneficiary, callData: "0xdeadbeef", paymaster: address });
        const windows = [
          { validUntil: 0, validAfter: 0 },
          { validUntil: 2 ** 48 - 1, validAfter: 1_700_000_000 },
        ];
        let checked = 0;
        for (const [i, op] of variedOps(base, 12).entries()) {
          const window = windows[i % 2]!;
          const tokenFields =
            kind === "erc20"
              ? { token: await stack.tokens.DAI.getAddress(), exchangeRate: BigInt(i) * 10n ** 30n + 1n, chargeMode: (i % 2) as 0 | 1 }
              : undefined;
          const offChain = offChainPaymasterHash(version, kind, op, stack.chainId, address, window, tokenFields);
          const onChain = await onChainPaymasterHash(version, paymaster, op, window, tokenFields);
          expect(offChain, `op ${i}`).to.equal(onChain);
          checked++;
        }
        expect(checked).to.equal(13);
      });
    });
  }
}
