/**
 * A viem `SmartAccount` for the eth-infinitism SimpleAccount the local stack deploys, on EntryPoint v0.6, v0.7 and
 * v0.8, with viem alone. viem ships SimpleAccount only as its EIP-7702 flavour (v0.8+), and permissionless's
 * `toSimpleSmartAccount` does not install beside our viem without --legacy-peer-deps; this is the small part of it
 * a test needs: the counterfactual address from the stack's SimpleAccountFactory, its initCode, the calls encoded
 * for that version's `execute`/`executeBatch`, and the owner's signature in the form that version checks.
 *
 *   const account = await toLocalSimpleAccount({ client, owner: privateKeyToAccount(key), stack, version: "v0.6" });
 *   const bundlerClient = createBundlerClient({ account, client, transport: http(stack.rpcUrl), paymaster: true, … });
 */
import type { Abi, Address, Hex, LocalAccount } from "viem";
import {
  entryPoint06Abi,
  entryPoint07Abi,
  entryPoint08Abi,
  getUserOperationHash,
  getUserOperationTypedData,
  toSmartAccount,
  type SmartAccount,
  type SmartAccountImplementation,
  type UserOperation,
} from "viem/account-abstraction";
import { readContract } from "viem/actions";
import { encodeFunctionData } from "viem";
import {
  SimpleAccountFactoryV06Artifact,
  SimpleAccountV06Artifact,
  SimpleAccountV07Artifact,
  SimpleAccountV08Artifact,
} from "@paymaster/contracts/artifacts";
import type { DeploymentManifest, EntryPointVersion } from "@paymaster/contracts/manifest";

export interface LocalSimpleAccountOptions {
  /** A client on the stack's chain (`createPublicClient({ chain, transport: http(stack.chain.url) })`). */
  client: SmartAccountImplementation["client"];
  /** The account's owner: it signs the ops. A fresh `privateKeyToAccount(generatePrivateKey())` needs no ether when a paymaster pays. */
  owner: LocalAccount;
  /** The stack (`startLocalStack()`), or anything with its deployment manifest. */
  stack: { manifest: DeploymentManifest };
  version: EntryPointVersion;
  /** The factory's salt (default 0): one owner, several accounts. */
  salt?: bigint;
}

export type LocalSimpleAccount = SmartAccount<SmartAccountImplementation<Abi, "0.6" | "0.7" | "0.8">>;

/**
 * A signature of the right shape that recovers to nobody in particular: SimpleAccount answers "signature failed"
 * to it instead of reverting, which is what gas estimation needs.
 */
const STUB_SIGNATURE: Hex = "0xfffffffffffffffffffffffffffffff0000000000000000000000000000000007aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1c";

const ENTRY_POINTS = {
  "v0.6": { abi: entryPoint06Abi as Abi, version: "0.6" },
  "v0.7": { abi: entryPoint07Abi as Abi, version: "0.7" },
  "v0.8": { abi: entryPoint08Abi as Abi, version: "0.8" },
} as const;

type Call = { to: Hex; data?: Hex | undefined; value?: bigint | undefined };

/** The account's callData for `calls`: one call is `execute`; several are that version's `executeBatch`. */
export function simpleAccountCallData(version: EntryPointVersion, calls: readonly Call[]): Hex {
  if (calls.length === 1) {
    const [call] = calls as [Call];
    return encodeFunctionData({ abi: SimpleAccountV06Artifact.abi as Abi, functionName: "execute", args: [call.to, call.value ?? 0n, call.data ?? "0x"] });
  }
  if (version === "v0.8") {
    const batch = calls.map((call) => ({ target: call.to, value: call.value ?? 0n, data: call.data ?? "0x" }));
    return encodeFunctionData({ abi: SimpleAccountV08Artifact.abi as Abi, functionName: "executeBatch", args: [batch] });
  }
  if (version === "v0.7") {
    return encodeFunctionData({
      abi: SimpleAccountV07Artifact.abi as Abi,
      functionName: "executeBatch",
      args: [calls.map((call) => call.to), calls.map((call) => call.value ?? 0n), calls.map((call) => call.data ?? "0x")],
    });
  }
  // v0.6's executeBatch carries no values.
  if (calls.some((call) => (call.value ?? 0n) !== 0n)) throw new Error("SimpleAccount v0.6 cannot send value in a batch (executeBatch(address[],bytes[])): send one call with value, or no value");
  return encodeFunctionData({ abi: SimpleAccountV06Artifact.abi as Abi, functionName: "executeBatch", args: [calls.map((call) => call.to), calls.map((call) => call.data ?? "0x")] });
}

export async function toLocalSimpleAccount(options: LocalSimpleAccountOptions): Promise<LocalSimpleAccount> {
  const { client, owner, stack, version } = options;
  const salt = options.salt ?? 0n;
  const deployment = stack.manifest.entryPoints[version];
  const chainId = stack.manifest.chainId;
  const entryPoint = { ...ENTRY_POINTS[version], address: deployment.entryPoint };
  // The three factories have the same createAccount(owner, salt) and getAddress(owner, salt).
  const factoryAbi = SimpleAccountFactoryV06Artifact.abi as Abi;
  const address = (await readContract(client, { address: deployment.simpleAccountFactory, abi: factoryAbi, functionName: "getAddress", args: [owner.address, salt] })) as Address;

  return toSmartAccount({
    client,
    entryPoint,
    extend: { owner },
    async getAddress() {
      return address;
    },
    // toSmartAccount answers no factory once the account has code.
    async getFactoryArgs() {
      return { factory: deployment.simpleAccountFactory, factoryData: encodeFunctionData({ abi: factoryAbi, functionName: "createAccount", args: [owner.address, salt] }) };
    },
    async encodeCalls(calls) {
      return simpleAccountCallData(version, calls);
    },
    async getStubSignature() {
      return STUB_SIGNATURE;
    },
    // SimpleAccount checks no ERC-1271 signature of its own on these versions: messages are signed by the owner.
    async signMessage({ message }) {
      return owner.signMessage({ message });
    },
    async signTypedData(typedData) {
      return owner.signTypedData(typedData as Parameters<LocalAccount["signTypedData"]>[0]);
    },
    // v0.6 and v0.7 recover an EIP-191 message of the userOpHash; v0.8's userOpHash is an EIP-712 digest, recovered as is.
    async signUserOperation(parameters) {
      const userOperation = { ...parameters, sender: address } as UserOperation;
      if (version === "v0.8") {
        return owner.signTypedData(getUserOperationTypedData({ chainId, entryPointAddress: entryPoint.address, userOperation: userOperation as UserOperation<"0.8"> }));
      }
      const hash = getUserOperationHash({ chainId, entryPointAddress: entryPoint.address, entryPointVersion: entryPoint.version, userOperation });
      return owner.signMessage({ message: { raw: hash } });
    },
  }) as Promise<LocalSimpleAccount>;
}
