//! FreeBSD's interrupt masking policy before SMPng (`sys/i386/isa/ipl_funcs.c`, `icu_ipl.s`,
//! `icu_vector.s` of 1998): a software priority mask, `cpl`, holds interrupts off by class
//! instead of the processor's interrupt flag. An interrupt that arrives while its bit is set in
//! `cpl` is acknowledged, masked in the 8259 and remembered in `ipending`; `doreti` (on the way
//! out of an interrupt) and `splx` (when process code lowers `cpl`) replay it.
//!
//! The policy is data the programs of `kernel/freebsd.rs` and the workload's `spl` sections use
//! through three steps ([`SplStep::SplEnter`], `Doreti`, and the workload's
//! `Spl`/`Splx` pieces).

use super::ops::{After, Entry, Frame, Var, NO_ENTRY};
use crate::workload::SplClass;

/// Every hardware interrupt's bit in `cpl` (`HWI_MASK`: the 16 lines of the 8259 pair).
pub const HWI_MASK: u32 = 0xFFFF;

/// How a held-off interrupt is replayed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Replay {
    /// `doreti`: jump to the IRQ's `Xresume` (the stub's second half: it is already masked and
    /// acknowledged).
    Doreti,
    /// `splz`: a software `int` to the IRQ's stub, from the top.
    Splz,
}

/// The kernel's `cpl` policy: its variables, the class masks and where replays go.
#[derive(Clone, Debug)]
pub struct SplPolicy {
    pub cpl: Var,
    pub ipending: Var,
    /// `tty_imask`, `net_imask`, `bio_imask` (isa.c: each class's IRQs) and `HWI_MASK` for
    /// `splhigh`/`splclock`, by [`SplClass`].
    pub masks: [u32; 4],
    /// Each IRQ's replay entry from `doreti` and from `splz` ([`NO_ENTRY`]: no handler).
    pub doreti: [Entry; 16],
    pub splz: [Entry; 16],
}

impl SplPolicy {
    pub fn new(cpl: Var, ipending: Var) -> SplPolicy {
        SplPolicy {
            cpl,
            ipending,
            masks: [0, 0, 0, HWI_MASK],
            doreti: [NO_ENTRY; 16],
            splz: [NO_ENTRY; 16],
        }
    }

    /// `cpl` after `splXXX()`: raised by the class's mask, or set (`splhigh`).
    pub fn raise(&self, class: SplClass, cpl: u64) -> u64 {
        let mask = u64::from(self.masks[class as usize]);
        match class {
            SplClass::High => mask,
            _ => cpl | mask,
        }
    }

    /// `doreti`'s replay: the lowest pending IRQ that `cpl` no longer masks, taken out of
    /// `ipending`, and its `Xresume` to jump to.
    pub fn doreti_replay(&self, vars: &mut [u64]) -> Option<Entry> {
        self.unpend(vars, Replay::Doreti)
    }

    /// `splz`'s replay: as `doreti`'s, with the IRQ's stub to `int` to.
    pub fn splz_replay(&self, vars: &mut [u64]) -> Option<Entry> {
        self.unpend(vars, Replay::Splz)
    }

    /// The lowest pending IRQ that `cpl` no longer masks, taken out of `ipending`, and the
    /// entry that replays it (`bsfl` on `ipending & ~cpl`).
    fn unpend(&self, vars: &mut [u64], how: Replay) -> Option<Entry> {
        let cpl = vars[usize::from(self.cpl.0)];
        let pending = &mut vars[usize::from(self.ipending.0)];
        let unmasked = *pending & !cpl & u64::from(HWI_MASK);
        if unmasked == 0 {
            return None;
        }
        let irq = unmasked.trailing_zeros() as usize;
        *pending &= !(1 << irq);
        Some(match how {
            Replay::Doreti => self.doreti[irq],
            Replay::Splz => self.splz[irq],
        })
    }
}

// ---- the operations of this subsystem's programs ------------------------------------------

/// An operation of FreeBSD's interrupt-priority policy (`splXXX`, `doreti`) in a program of
/// the step language (`Step::Spl`), interpreted here by [`SplPolicy::step`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SplStep {
    /// FreeBSD's `Xresume`: save `cpl` in the frame's second local and raise it by the IRQ's
    /// class mask (the kernel's [`SplPolicy`]).
    SplEnter(u32),
    /// `doreti`: restore `cpl` from the frame's second local; if an interrupt it held off is
    /// pending and now unmasked, take it from `ipending` and go on at its replay entry.
    Doreti,
}

impl SplStep {
    /// Where the operation may go instead of the next step: nowhere, none branches.
    pub fn target_mut(&mut self) -> Option<&mut Entry> {
        None
    }
}

impl SplPolicy {
    /// Run operation `op` of frame `frame` (its locals) with the kernel's variables.
    #[inline(always)]
    pub fn step(&self, op: SplStep, frame: &mut Frame, vars: &mut [u64]) -> After {
        match op {
            SplStep::SplEnter(mask) => {
                let p = self;
                let cpl = &mut vars[usize::from(p.cpl.0)];
                frame.b = *cpl as u32;
                *cpl |= u64::from(mask);
            }
            SplStep::Doreti => {
                let p = self;
                vars[usize::from(p.cpl.0)] = u64::from(frame.b);
                if let Some(e) = p.doreti_replay(vars) {
                    return After::Goto(e);
                }
            }
        }
        After::Next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_unmasked_pending_irq_is_replayed_first_and_only_once() {
        let mut p = SplPolicy::new(Var(0), Var(1));
        p.doreti[3] = 30;
        p.doreti[7] = 70;
        p.masks[SplClass::Tty as usize] = 1 << 7;
        let mut vars = vec![1 << 7, (1 << 7) | (1 << 3)];
        assert_eq!(p.unpend(&mut vars, Replay::Doreti), Some(30));
        assert_eq!(p.unpend(&mut vars, Replay::Doreti), None, "IRQ 7 is masked");
        vars[0] = 0;
        assert_eq!(p.unpend(&mut vars, Replay::Doreti), Some(70));
        assert_eq!(vars[1], 0);
        assert_eq!(p.raise(SplClass::Tty, 1 << 3), (1 << 3) | (1 << 7));
        assert_eq!(p.raise(SplClass::High, 1 << 3), u64::from(HWI_MASK));
    }
}
