// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";

/// @title PermitToken
/// @notice OpenZeppelin's EIP-2612 token, for the ERC-7562 evidence that a permit cannot run in validation.
contract PermitToken is ERC20Permit {
    constructor() ERC20("Permit USD (test)", "PUSD") ERC20Permit("Permit USD (test)") {}

    /// @notice Mints `amount` base units to `to`. Unrestricted: test token.
    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
