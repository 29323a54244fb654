// A wallet's view, end to end through a real bundler: viem's bundler client with our standard ERC-7677
// endpoint as its paymaster and @pimlico/alto (on its v2 API, Pimlico's, which checks preVerificationGas and
// fees) running against the embedded local chain (Hardhat's `l1` chain type, hardfork osaka: Prague's rules,
// type-4 transactions included). Accounts: a SimpleAccount on EntryPoint v0.6/v0.7 (permissionless's
// toSimpleSmartAccount: viem 2.57.20's account-abstraction module has none), and on v0.8 an EOA delegated by
// EIP-7702 to the stack's Simple7702Account (viem's toSimple7702SmartAccount). Last, ops whose gas the v1
// dialect (pm_sponsorUserOperation) filled in are sent to Alto as they are. One chain and one Alto serve the
// whole file.
// Alto binds every interface, so this file runs only inside a loopback-only network namespace
// (scripts/netns-test.sh); it refuses to start alto anywhere else.
import { type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { networkInterfaces } from "node:os";
import { expect } from "chai";
import {
  createPublicClient,
  createWalletClient,
  decodeEventLog,
  defineChain,
  encodeFunctionData,
  http,
  maxUint256,
  toHex,
  type Abi,
  type Chain,
  type Hash,
  type PublicClient,
} from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import {
  createBundlerClient,
  createPaymasterClient,
  entryPoint08Address,
  formatUserOperationRequest,
  toSimple7702SmartAccount,
  type SmartAccount,
  type UserOperationReceipt,
} from "viem/account-abstraction";
import { toSimpleSmartAccount } from "permissionless/accounts";
import { createPimlicoClient } from "permissionless/clients/pimlico";
import { ERC20PaymasterV06Artifact, TestTokenArtifact } from "@paymaster/contracts/artifacts";
import { eip7702DelegationCode, type Address, type EntryPointVersion, type Hex, type UserOperationV08 } from "@paymaster/shared";
import { executeCallData } from "../src/local/embedded.ts";
import type { SponsorshipRecord } from "../src/store/types.ts";
import {
  call,
  chainRequest,
  ethCall,
  mint,
  new7702Wallet,
  newWallet,
  opFromResponse,
  signAsOwner,
  startTestStack,
  wireOp,
  type Embedded,
  type Wallet,
} from "./helpers/stack.ts";
import { onlyLoopback, startAlto, stopAlto } from "./helpers/alto.ts";

type Call = { to: Address; data?: Hex; value?: bigint };
const tokenAbi = TestTokenArtifact.abi as Abi;
const erc20PaymasterAbi = ERC20PaymasterV06Artifact.abi as Abi; // TokenCharged is the same event in every version
/** How often viem polls Alto for a receipt (its default, 4 s, would dominate each test's time). */
const POLLING_MS = 200;
const show = (value: unknown) => JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v));

describe("through a real bundler (alto) with viem's bundler + paymaster clients", function () {
  this.timeout(180_000);
  let embedded: Embedded;
  let alto: ChildProcess | undefined;
  let altoUrl: string;
  let localChain: Chain;
  let client: PublicClient;

  before(async function () {
    if (!onlyLoopback()) {
      throw new Error(`bundler.test.ts must run inside a loopback-only network namespace (found interfaces: ${Object.keys(networkInterfaces()).join(", ")}); use scripts/netns-test.sh`);
    }
    embedded = await startTestStack();
    const { chain, manifest } = embedded.stack;
    ({ alto, url: altoUrl } = await startAlto({
      rpcUrl: chain.url,
      entryPoints: (["v0.6", "v0.7", "v0.8"] as const).map((v) => manifest.entryPoints[v].entryPoint),
      executorKey: chain.accounts[7]!.privateKey,
      utilityKey: chain.accounts[8]!.privateKey,
    }));
    localChain = defineChain({
      id: chain.chainId,
      name: "local",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [chain.url] } },
    });
    client = createPublicClient({ chain: localChain, transport: http(chain.url), pollingInterval: POLLING_MS });
  });

  after(async () => {
    await stopAlto(alto);
    await embedded?.close();
  });

  /** Sends `calls` from `account` through Alto, with our ERC-7677 endpoint as the paymaster, and waits for the receipt. */
  async function sendThroughAlto(account: SmartAccount, context: Record<string, unknown>, calls: Call[], authorization?: Awaited<ReturnType<PrivateKeyAccount["signAuthorization"]>>) {
    const pimlico = createPimlicoClient({ chain: localChain, transport: http(altoUrl), entryPoint: account.entryPoint as never });
    const bundler = createBundlerClient({
      account,
      client,
      chain: localChain,
      transport: http(altoUrl),
      pollingInterval: POLLING_MS,
      paymaster: createPaymasterClient({ transport: http(embedded.erc7677Endpoint) }),
      paymasterContext: context,
      userOperation: { estimateFeesPerGas: async () => (await pimlico.getUserOperationGasPrice()).fast },
    });
    const hash = await bundler.sendUserOperation({ calls, ...(authorization ? { authorization } : {}) } as Parameters<typeof bundler.sendUserOperation>[0]);
    const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 60_000 });
    expect(receipt.success, show(receipt)).to.equal(true);
    return { receipt, hash };
  }

  /** The TokenCharged event the ERC-20 paymaster emitted in the op's transaction. */
  function tokenCharged(receipt: UserOperationReceipt, paymaster: Address) {
    for (const log of receipt.receipt.logs) {
      if (log.address.toLowerCase() !== paymaster.toLowerCase()) continue;
      try {
        const event = decodeEventLog({ abi: erc20PaymasterAbi, data: log.data, topics: log.topics as [Hex, ...Hex[]] });
        if (event.eventName === "TokenCharged") return event.args as unknown as { token: Address; tokenAmount: bigint; gasCostWei: bigint };
      } catch {
        // another event of the paymaster
      }
    }
    return undefined;
  }

  /**
   * The service's record of the op once its settlement watcher has seen the UserOperationEvent (found by the
   * userOpHash Alto answered, so the service's hash is the EntryPoint's). Blocks are mined so the op gets its
   * confirmation.
   */
  async function settled(hash: Hash): Promise<SponsorshipRecord> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const record = await embedded.running.service.store.findSponsorshipByUserOpHash(hash);
      if (record?.status === "settled") return record;
      if (Date.now() > deadline) throw new Error(`not settled within 30 s: ${show(record)}`);
      await chainRequest(embedded, "evm_mine");
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  describe("EntryPoint v0.6/v0.7: a SimpleAccount", () => {
    const VERSIONS: EntryPointVersion[] = ["v0.6", "v0.7"];

    async function simpleAccount(version: EntryPointVersion) {
      return toSimpleSmartAccount({
        client,
        owner: privateKeyToAccount(generatePrivateKey()),
        entryPoint: { address: embedded.stack.manifest.entryPoints[version].entryPoint, version: version === "v0.6" ? "0.6" : "0.7" },
        factoryAddress: embedded.stack.manifest.entryPoints[version].simpleAccountFactory,
      });
    }

    for (const version of VERSIONS) {
      it(`${version}: a sponsored op (strategy_code) deploys the account and runs its call, paid by our verifying paymaster`, async () => {
        const account = await simpleAccount(version);
        const target = privateKeyToAccount(generatePrivateKey()).address;
        const { receipt, hash } = await sendThroughAlto(account, { strategy_code: embedded.strategyCode }, [{ to: target, data: "0x" }]);
        expect(receipt.sender).to.equal(account.address);
        expect(receipt.paymaster?.toLowerCase()).to.equal(embedded.stack.manifest.entryPoints[version].verifyingPaymaster.toLowerCase());
        expect(receipt.receipt.from.toLowerCase()).to.equal(embedded.stack.chain.accounts[7]!.address.toLowerCase()); // alto's executor
        const record = await embedded.running.service.store.findSponsorshipByUserOpHash(hash);
        expect(record?.mode).to.equal("sponsor");
      });
    }

    for (const version of VERSIONS) {
      it(`${version}: an ERC-20 op (token USDC) whose own call approves the ERC-20 paymaster, which charges the account in USDC`, async () => {
        const { manifest } = embedded.stack;
        const usdc = manifest.tokens.find((t) => t.symbol === "USDC")!;
        const erc20Paymaster = manifest.entryPoints[version].erc20Paymaster;
        const minted = 1_000n * 10n ** 6n;
        const account = await simpleAccount(version);
        await mint(embedded, "USDC", account.address, minted);
        await new Promise((resolve) => setTimeout(resolve, 300)); // let the service's market see the new block
        const approve = encodeFunctionData({ abi: tokenAbi, functionName: "approve", args: [erc20Paymaster, maxUint256] });
        const { receipt } = await sendThroughAlto(account, { token: "USDC" }, [{ to: usdc.address, data: approve }]);
        expect(receipt.paymaster?.toLowerCase()).to.equal(erc20Paymaster.toLowerCase());
        const balance = (await ethCall(embedded, usdc.address, tokenAbi, "balanceOf", [account.address])) as bigint;
        expect(balance < minted && balance > 0n, `balance ${balance}`).to.equal(true);
      });
    }
  });

  describe("EntryPoint v0.8: an EOA delegated by EIP-7702 (viem's toSimple7702SmartAccount)", () => {
    const v08 = () => embedded.stack.manifest.entryPoints["v0.8"];
    const delegate = () => v08().simple7702Account!;
    const code = (address: Address) => client.getCode({ address });

    before(() => {
      // viem's 7702 account talks to the canonical v0.8 EntryPoint, which the stack deploys at its address; its
      // default implementation is the delegate's canonical deployment, which the stack does not reproduce (its
      // own salt), so the tests name the stack's Simple7702Account.
      expect(v08().entryPoint).to.equal(entryPoint08Address);
    });

    /** A fresh EOA as viem's Simple7702 account, and its signed authorization to the stack's delegate. */
    async function freshEoa() {
      const owner = privateKeyToAccount(generatePrivateKey());
      const account = await toSimple7702SmartAccount({ client, owner, implementation: delegate() });
      const authorization = await owner.signAuthorization({ address: delegate(), chainId: localChain.id, nonce: await client.getTransactionCount({ address: owner.address }) });
      return { owner, account, authorization };
    }

    /** The handleOps transaction Alto sent: its type and the authorizations it carried. */
    async function bundleTransaction(receipt: UserOperationReceipt) {
      const tx = await client.getTransaction({ hash: receipt.receipt.transactionHash });
      return { type: tx.type, authorizations: (tx.authorizationList ?? []).map((a) => ({ address: a.address.toLowerCase(), nonce: a.nonce })) };
    }

    it("Sponsor mode: a fresh EOA's first op carries its authorization; Alto lands it in a type-4 handleOps, the EOA is delegated and the watcher settles it", async () => {
      const { owner, account, authorization } = await freshEoa();
      expect(await code(owner.address)).to.equal(undefined);
      const target = privateKeyToAccount(generatePrivateKey()).address;
      const { receipt, hash } = await sendThroughAlto(account, { strategy_code: embedded.strategyCode }, [{ to: target, data: "0x" }], authorization);
      expect(receipt.sender).to.equal(owner.address);
      expect(receipt.entryPoint.toLowerCase()).to.equal(v08().entryPoint.toLowerCase());
      expect(receipt.paymaster?.toLowerCase()).to.equal(v08().verifyingPaymaster.toLowerCase());
      expect(await code(owner.address)).to.equal(eip7702DelegationCode(delegate()));
      const bundle = await bundleTransaction(receipt);
      expect(bundle.type).to.equal("eip7702");
      expect(bundle.authorizations).to.deep.equal([{ address: delegate().toLowerCase(), nonce: 0 }]);

      const record = await settled(hash);
      expect(record.mode).to.equal("sponsor");
      expect(record.version).to.equal("v0.8");
      expect(record.settlement).to.deep.include({ actualGasCostWei: receipt.actualGasCost, success: true, txHash: receipt.receipt.transactionHash, actualTokenCost: null });
    });

    it("Sponsor mode: an EOA delegated earlier sends an op with no authorization; it lands, the delegation unchanged", async () => {
      const { owner, account, authorization } = await freshEoa();
      // Delegated by a type-4 transaction someone else paid for (the EOA holds no ether).
      const relayer = createWalletClient({ account: privateKeyToAccount(embedded.stack.chain.accounts[6]!.privateKey), chain: localChain, transport: http(embedded.stack.chain.url) });
      await client.waitForTransactionReceipt({ hash: await relayer.sendTransaction({ to: owner.address, data: "0x", authorizationList: [authorization] }) });
      expect(await code(owner.address)).to.equal(eip7702DelegationCode(delegate()));

      const { receipt, hash } = await sendThroughAlto(account, { strategy_code: embedded.strategyCode }, [{ to: privateKeyToAccount(generatePrivateKey()).address, data: "0x" }]);
      expect(receipt.paymaster?.toLowerCase()).to.equal(v08().verifyingPaymaster.toLowerCase());
      expect((await bundleTransaction(receipt)).authorizations).to.deep.equal([]);
      expect(await code(owner.address)).to.equal(eip7702DelegationCode(delegate()));
      const record = await settled(hash);
      expect(record.settlement).to.deep.include({ actualGasCostWei: receipt.actualGasCost, success: true });
    });

    it("ERC-20 mode: a fresh EOA's first op carries its authorization and approves the ERC-20 paymaster, which charges it in USDC; the watcher settles the token cost", async () => {
      const { owner, account, authorization } = await freshEoa();
      const usdc = embedded.stack.manifest.tokens.find((t) => t.symbol === "USDC")!;
      const erc20Paymaster = v08().erc20Paymaster;
      const minted = 1_000n * 10n ** 6n;
      await mint(embedded, "USDC", owner.address, minted);
      await new Promise((resolve) => setTimeout(resolve, 300)); // let the service's market see the new block
      const approve = encodeFunctionData({ abi: tokenAbi, functionName: "approve", args: [erc20Paymaster, maxUint256] });
      const { receipt, hash } = await sendThroughAlto(account, { token: "USDC" }, [{ to: usdc.address, data: approve }], authorization);
      expect(receipt.paymaster?.toLowerCase()).to.equal(erc20Paymaster.toLowerCase());
      expect(await code(owner.address)).to.equal(eip7702DelegationCode(delegate()));
      expect((await bundleTransaction(receipt)).type).to.equal("eip7702");

      const charged = tokenCharged(receipt, erc20Paymaster);
      expect(charged, "TokenCharged").to.not.equal(undefined);
      expect(charged!.token.toLowerCase()).to.equal(usdc.address.toLowerCase());
      expect(charged!.tokenAmount > 0n).to.equal(true);
      const balance = (await ethCall(embedded, usdc.address, tokenAbi, "balanceOf", [owner.address])) as bigint;
      expect(balance).to.equal(minted - charged!.tokenAmount);

      const record = await settled(hash);
      expect(record.mode).to.equal("erc20");
      expect(record.token?.toLowerCase()).to.equal(usdc.address.toLowerCase());
      expect(charged!.tokenAmount <= record.maxTokenCost!).to.equal(true);
      expect(record.settlement).to.deep.include({ actualGasCostWei: receipt.actualGasCost, actualTokenCost: charged!.tokenAmount, success: true });
    });
  });

  describe("the v1 dialect: the gas pm_sponsorUserOperation fills in (preVerificationGas included) passes Alto's checks", () => {
    // Random bytes passed to the call's target: 2 kB make EIP-7623's calldata floor, not the op's gas, set what the bundle pays.
    const WALLETS: { label: string; newWallet: () => Promise<Wallet>; payload?: number }[] = [
      ...(["v0.6", "v0.7", "v0.8"] as const).map((version) => ({ label: `${version} SimpleAccount`, newWallet: () => newWallet(embedded, version) })),
      { label: "v0.8 EIP-7702 sender, first op with its authorization", newWallet: () => new7702Wallet(embedded) },
      ...(["v0.6", "v0.7"] as const).map((version) => ({ label: `${version} SimpleAccount, 2 kB of call data`, newWallet: () => newWallet(embedded, version), payload: 2048 })),
    ];
    for (const { label, newWallet: makeWallet, payload = 0 } of WALLETS) {
      it(`${label}: the op as the service filled it, signed by the owner, is accepted by eth_sendUserOperation and lands`, async () => {
        const wallet = await makeWallet();
        const { version } = wallet;
        // Fees as wallets take them from their bundler (Alto refuses fees below the lowest it saw recently, which a
        // fast-falling base fee leaves above the service's own 2 x base fee + priority); the rest is the service's.
        const fees = (await createPimlicoClient({ chain: localChain, transport: http(altoUrl) }).getUserOperationGasPrice()).fast;
        const target = privateKeyToAccount(generatePrivateKey()).address;
        const wire = wireOp(wallet, executeCallData(target, toHex(randomBytes(payload))), { extra: { maxFeePerGas: toHex(fees.maxFeePerGas), maxPriorityFeePerGas: toHex(fees.maxPriorityFeePerGas) } });
        const answer = await call(embedded.endpoint, "pm_sponsorUserOperation", [wire, version === "v0.6" ? { strategy_code: embedded.strategyCode } : { strategy_code: embedded.strategyCode, version }]);
        expect(answer.status, show(answer.body)).to.equal(200);
        const { userOp } = await signAsOwner(embedded, wallet, opFromResponse(wallet, wire, answer.body.data));
        // As wallets send it: a 7702 sender's factory is "0x7702", its tuple goes as `authorization` (eip7702Auth on the wire).
        const { eip7702Auth, ...fields } = userOp as UserOperationV08;
        const rpcOp = formatUserOperationRequest({ ...fields, ...(eip7702Auth ? { factory: "0x7702", authorization: { ...eip7702Auth, chainId: Number(eip7702Auth.chainId), nonce: Number(eip7702Auth.nonce) } } : {}) } as never);
        const entryPoint = embedded.stack.manifest.entryPoints[version].entryPoint;
        const bundler = createBundlerClient({ client, transport: http(altoUrl), pollingInterval: POLLING_MS });
        const hash = await bundler.request({ method: "eth_sendUserOperation", params: [rpcOp, entryPoint] });
        const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 60_000 });
        expect(receipt.success, show(receipt)).to.equal(true);
        expect(receipt.paymaster?.toLowerCase()).to.equal(embedded.stack.manifest.entryPoints[version].verifyingPaymaster.toLowerCase());
        expect((await embedded.running.service.store.findSponsorshipByUserOpHash(hash))?.mode).to.equal("sponsor");
        if (eip7702Auth) expect(await client.getCode({ address: wallet.sender })).to.equal(eip7702DelegationCode(eip7702Auth.address));
      });
    }
  });
});
