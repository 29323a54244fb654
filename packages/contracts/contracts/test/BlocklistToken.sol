// SPDX-License-Identifier: MIT
pragma solidity ^0.8.23;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @title BlocklistToken
/// @notice A USDC-style ERC-20 for tests: any transfer from or to a blocklisted address reverts. The blocklist is
///         open to anyone (test token), so an op's own calls can blocklist its sender between validation and postOp.
contract BlocklistToken is ERC20 {
    /// @notice `account` is blocklisted.
    error Blocklisted(address account);

    /// @notice Whether transfers from or to an address revert.
    mapping(address account => bool blocked) public isBlocklisted;

    constructor() ERC20("Blocklist USD (test)", "BUSD") {}

    /// @inheritdoc ERC20
    function decimals() public pure override returns (uint8) {
        return 6;
    }

    /// @notice Mints `amount` base units to `to`. Unrestricted: test token.
    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    /// @notice Sets whether `account` is blocklisted. Unrestricted: test token.
    function setBlocklisted(address account, bool blocked) external {
        isBlocklisted[account] = blocked;
    }

    function _update(address from, address to, uint256 value) internal override {
        if (isBlocklisted[from]) revert Blocklisted(from);
        if (isBlocklisted[to]) revert Blocklisted(to);
        super._update(from, to, value);
    }
}
