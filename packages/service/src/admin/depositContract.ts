/**
 * The gas-tank deposit contract (GasTankDeposit) of a network, as an operator manages it: what it holds, who
 * owns it and whether the service watches it; withdrawing what users paid in (owner key), e.g. to top up the
 * paymasters' EntryPoint deposits. The service's ledger is the gas tanks; this contract is only the till.
 */
import { Contract, Interface, type Wallet } from "ethers";
import { ENTRY_POINT_V06_ADDRESS, ENTRY_POINT_V07_ADDRESS, ENTRY_POINT_V08_ADDRESS, type Address } from "@paymaster/shared";
import { GAS_TANK_DEPOSIT_LABEL } from "@paymaster/contracts/deploy";
import { AdminError } from "./context.ts";
import { selectPaymasters, type ChainTarget } from "./chainTarget.ts";
import { send, type SentChange } from "./paymasters.ts";

const GAS_TANK_DEPOSIT = new Interface([
  "function owner() view returns (address)",
  "function pendingOwner() view returns (address)",
  "function withdraw(address to, uint256 amount)",
  "function depositToPaymaster(address entryPoint, address paymaster, uint256 amount)",
]);
const ENTRY_POINT = new Interface(["function getDepositInfo(address account) view returns (uint256, bool, uint112, uint32, uint48)"]);

export interface DepositContractStatus {
  address: Address;
  /** Ether paid in and not withdrawn yet. */
  balanceWei: string;
  owner: Address;
  pendingOwner: Address | null;
  /** Whether the configuration names it (networks[].depositContract): only then does the service credit its deposits. */
  watched: boolean;
  warnings: string[];
}

const ZERO = "0x0000000000000000000000000000000000000000";

/** The network's deposit contract (the configuration's, else the deployment manifest's), or NOT_FOUND. */
function depositContractOf(target: ChainTarget): Address {
  if (target.gasTankDeposit === undefined) {
    throw new AdminError("NOT_FOUND", `no gas-tank deposit contract known for ${target.network}: set the network's depositContract or deploy first (paymaster deploy)`);
  }
  return target.gasTankDeposit;
}

export async function depositContractStatus(target: ChainTarget): Promise<DepositContractStatus> {
  const address = depositContractOf(target);
  if ((await target.provider.getCode(address)) === "0x") throw new AdminError("NOT_FOUND", `no contract at ${address} on ${target.network}: deploy it (paymaster deploy) or fix depositContract`);
  const contract = new Contract(address, GAS_TANK_DEPOSIT, target.provider);
  const [balance, owner, pendingOwner] = (await Promise.all([target.provider.getBalance(address), contract.getFunction("owner")(), contract.getFunction("pendingOwner")()])) as [bigint, Address, Address];
  const watched = target.config?.depositContract === address;
  const warnings: string[] = [];
  if (!watched) warnings.push(`the configuration of ${target.network} does not name it as depositContract: the service does not credit its deposits`);
  if (pendingOwner !== ZERO) warnings.push(`ownership offered to ${pendingOwner}, not yet accepted (acceptOwnership)`);
  return { address, balanceWei: balance.toString(), owner, pendingOwner: pendingOwner === ZERO ? null : pendingOwner, watched, warnings };
}

/**
 * Sends `amountWei` of what the contract holds to `to` (owner only). Refuses an EntryPoint as recipient (audit 2,
 * N-3): plain ether sent to one is credited to the deposit contract's own EntryPoint deposit, which it can never
 * withdraw. Contracts deployed before that fix do not refuse it themselves, so the command checks first.
 */
export async function withdrawFromDepositContract(target: ChainTarget, owner: Wallet, options: { to: Address; amountWei: bigint }): Promise<SentChange> {
  const address = depositContractOf(target);
  if (await isEntryPoint(target, options.to)) {
    throw new AdminError(
      "INVALID_INPUT",
      `--recipient ${options.to} is an EntryPoint: ether sent there would be credited to the deposit contract's own EntryPoint deposit and lost; ` +
        "send it to an address you control, then top the paymasters up (paymaster deposit, or depositToPaymaster on the contract)",
    );
  }
  const contract = new Contract(address, GAS_TANK_DEPOSIT, owner);
  return send(GAS_TANK_DEPOSIT_LABEL, `withdraw ${options.amountWei} wei to ${options.to}`, contract.getFunction("withdraw")(options.to, options.amountWei));
}

/** A canonical or configured EntryPoint, or any contract answering EntryPoint's getDepositInfo(address). */
async function isEntryPoint(target: ChainTarget, to: Address): Promise<boolean> {
  const known = [ENTRY_POINT_V06_ADDRESS, ENTRY_POINT_V07_ADDRESS, ENTRY_POINT_V08_ADDRESS, ...target.paymasters.map((p) => p.entryPoint)];
  if (known.some((a) => a.toLowerCase() === to.toLowerCase())) return true;
  if ((await target.provider.getCode(to)) === "0x") return false;
  try {
    const answer = await target.provider.call({ to, data: ENTRY_POINT.encodeFunctionData("getDepositInfo", [to]) });
    return (answer.length - 2) / 2 >= 160;
  } catch {
    return false;
  }
}

/**
 * Moves `amountWei` of what the contract holds into one paymaster's EntryPoint deposit (depositToPaymaster,
 * owner only; audit 2, N-3). Contracts deployed before that function existed refuse the call: withdraw to an
 * address you control, then `paymaster deposit`.
 */
export async function fundPaymasterFromDepositContract(target: ChainTarget, owner: Wallet, options: { paymaster: string; amountWei: bigint }): Promise<SentChange> {
  const address = depositContractOf(target);
  const [paymaster] = selectPaymasters(target, options.paymaster);
  const contract = new Contract(address, GAS_TANK_DEPOSIT, owner);
  return send(
    GAS_TANK_DEPOSIT_LABEL,
    `depositToPaymaster ${options.amountWei} wei into ${paymaster!.label}'s deposit at ${paymaster!.entryPoint}`,
    contract.getFunction("depositToPaymaster")(paymaster!.entryPoint, paymaster!.address, options.amountWei),
  );
}
