//! A tiny EVM assembler: opcodes by name, labels resolved to `PUSH2`
//! targets, and an exact gas burn used to calibrate the contracts.
//!
//! The contracts in [`crate::erc20`] and [`crate::attack`] are written one
//! instruction per line with this builder, so the bytecode reads as
//! annotated assembly and jump targets never need counting by hand.

use std::collections::HashMap;

/// The opcodes the contracts use, by their Yellow Paper mnemonics (Osaka
/// numbering).
#[allow(missing_docs)]
pub mod op {
    pub const STOP: u8 = 0x00;
    pub const ADD: u8 = 0x01;
    pub const SUB: u8 = 0x03;
    pub const LT: u8 = 0x10;
    pub const GT: u8 = 0x11;
    pub const EQ: u8 = 0x14;
    pub const ISZERO: u8 = 0x15;
    pub const AND: u8 = 0x16;
    pub const SHR: u8 = 0x1c;
    pub const KECCAK256: u8 = 0x20;
    pub const CALLER: u8 = 0x33;
    pub const CALLVALUE: u8 = 0x34;
    pub const CALLDATALOAD: u8 = 0x35;
    pub const CALLDATASIZE: u8 = 0x36;
    pub const CODECOPY: u8 = 0x39;
    pub const GAS: u8 = 0x5a;
    pub const POP: u8 = 0x50;
    pub const MLOAD: u8 = 0x51;
    pub const MSTORE: u8 = 0x52;
    pub const SLOAD: u8 = 0x54;
    pub const SSTORE: u8 = 0x55;
    pub const JUMP: u8 = 0x56;
    pub const JUMPI: u8 = 0x57;
    pub const JUMPDEST: u8 = 0x5b;
    pub const PUSH0: u8 = 0x5f;
    pub const PUSH1: u8 = 0x60;
    pub const PUSH2: u8 = 0x61;
    pub const DUP1: u8 = 0x80;
    pub const DUP2: u8 = 0x81;
    pub const DUP3: u8 = 0x82;
    pub const DUP4: u8 = 0x83;
    pub const DUP5: u8 = 0x84;
    pub const DUP7: u8 = 0x86;
    pub const SWAP1: u8 = 0x90;
    pub const SWAP2: u8 = 0x91;
    pub const SWAP3: u8 = 0x92;
    pub const CALL: u8 = 0xf1;
    pub const RETURN: u8 = 0xf3;
    pub const REVERT: u8 = 0xfd;
}

/// Gas of one iteration of the [`Asm::burn`] loop:
/// JUMPDEST 1 + PUSH1 3 + SWAP1 3 + SUB 3 + DUP1 3 + PUSH2 3 + JUMPI 10.
pub const BURN_LOOP_ITERATION_GAS: u64 = 26;
/// Fixed gas of the [`Asm::burn`] loop around its iterations: PUSH2 3 + POP 2.
pub const BURN_LOOP_FIXED_GAS: u64 = 5;

/// Builds bytecode instruction by instruction.
#[derive(Default)]
pub struct Asm {
    code: Vec<u8>,
    labels: HashMap<String, usize>,
    fixups: Vec<(usize, String)>,
    burns: usize,
}

impl Asm {
    /// An empty program.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one opcode without immediate data.
    pub fn op(&mut self, opcode: u8) -> &mut Self {
        debug_assert!(
            !(op::PUSH1..=op::PUSH1 + 31).contains(&opcode),
            "PUSH needs data: use push()"
        );
        self.code.push(opcode);
        self
    }

    /// Appends `PUSH<n>` of `bytes` (1..=32 bytes, kept as given, so the
    /// width is what the caller wrote).
    pub fn push(&mut self, bytes: &[u8]) -> &mut Self {
        assert!(
            (1..=32).contains(&bytes.len()),
            "PUSH takes 1..=32 bytes, got {}",
            bytes.len()
        );
        #[allow(clippy::cast_possible_truncation)] // asserted 1..=32
        let width = bytes.len() as u8;
        self.code.push(op::PUSH1 + (width - 1));
        self.code.extend_from_slice(bytes);
        self
    }

    /// Appends `PUSH1 value`.
    pub fn push1(&mut self, value: u8) -> &mut Self {
        self.push(&[value])
    }

    /// Appends `PUSH2` of a label's offset (resolved by [`Asm::finish`]).
    pub fn push_label(&mut self, label: &str) -> &mut Self {
        self.code.push(op::PUSH2);
        self.fixups.push((self.code.len(), label.to_owned()));
        self.code.extend_from_slice(&[0, 0]);
        self
    }

    /// Defines `label` here and emits its `JUMPDEST`.
    pub fn label(&mut self, label: &str) -> &mut Self {
        let previous = self.labels.insert(label.to_owned(), self.code.len());
        assert!(previous.is_none(), "label {label} defined twice");
        self.code.push(op::JUMPDEST);
        self
    }

    /// Burns exactly `gas` gas and leaves the stack as it was: a countdown
    /// loop of [`BURN_LOOP_ITERATION_GAS`] per iteration (plus
    /// [`BURN_LOOP_FIXED_GAS`]), then one `JUMPDEST` (1 gas) per remaining
    /// unit.
    ///
    /// The calibration pads in [`crate::erc20`] use it to stand in for the
    /// work a compiled token does beyond the hand-written path.
    pub fn burn(&mut self, gas: u64) -> &mut Self {
        let mut remaining = gas;
        let fixed = BURN_LOOP_FIXED_GAS + BURN_LOOP_ITERATION_GAS;
        if remaining >= fixed {
            let iterations = (remaining - BURN_LOOP_FIXED_GAS) / BURN_LOOP_ITERATION_GAS;
            let label = format!("__burn_{}", self.burns);
            self.burns += 1;
            // The programs are the crate's own: a burn this large is a bug.
            #[allow(clippy::expect_used)]
            let count = u16::try_from(iterations).expect("burn loop of at most 65,535 iterations");
            self.push(&count.to_be_bytes()); //  [k]                  PUSH2 3
            self.label(&label); //                [k]                  JUMPDEST 1
            self.push1(1).op(op::SWAP1).op(op::SUB); // [k-1]          PUSH1 SWAP1 SUB 9
            self.op(op::DUP1).push_label(&label); // [k-1, k-1, loop]  DUP1 PUSH2 6
            self.op(op::JUMPI); //                [k-1]                JUMPI 10
            self.op(op::POP); //                  []                   POP 2
            remaining -= BURN_LOOP_FIXED_GAS + iterations * BURN_LOOP_ITERATION_GAS;
        }
        for _ in 0..remaining {
            self.code.push(op::JUMPDEST);
        }
        self
    }

    /// Resolves labels and returns the bytecode.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut code = std::mem::take(&mut self.code);
        for (at, label) in self.fixups.drain(..) {
            let target = *self
                .labels
                .get(&label)
                .unwrap_or_else(|| panic!("undefined label {label}"));
            // The programs are the crate's own: code this long is a bug.
            #[allow(clippy::expect_used)]
            let target = u16::try_from(target).expect("code under 64 KiB");
            code[at..at + 2].copy_from_slice(&target.to_be_bytes());
        }
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_resolve_to_their_jumpdest() {
        let mut asm = Asm::new();
        asm.push_label("end").op(op::JUMP).op(op::STOP).label("end");
        assert_eq!(
            asm.finish(),
            vec![op::PUSH2, 0, 5, op::JUMP, op::STOP, op::JUMPDEST]
        );
    }

    #[test]
    fn short_burns_are_jumpdests() {
        let code = Asm::new().burn(7).finish();
        assert_eq!(code, vec![op::JUMPDEST; 7]);
    }
}
