//! The FreeBSD library: FreeBSD-current of July 1998 on i386 (seed 004), its ISA interrupt path
//! as programs of the step language, with `cpl` as its masking policy (`kernel/spl.rs`).
//!
//! - The interrupt gate's target is the IRQ's `INTR` stub (`icu_vector.s`): mask the IRQ in the
//!   8259's IMR (`imen`), send a non-specific EOI (to the slave too for IRQ 8-15), then test
//!   `cpl`. Held off: note it in `ipending`, leave it masked, `iret`. Otherwise `Xresume`:
//!   raise `cpl` by the IRQ's class mask, enable interrupts and call the handler; afterwards
//!   disable them, unmask the IRQ and go through `doreti`, which replays what `cpl` held off
//!   (`Xresume` of the next one) before the `iret`.
//! - `splz` (from `splx` in process code) enters the stub from the top through a software
//!   `int`.
//! - The clock handlers: `clkintr` -> `hardclock` reads the timecounter (the counter card),
//!   `rtcintr` loops `while (rtcin(RTC_INTR) & RTCIR_PERIOD) statclock()`, each `rtcin` being
//!   `outb 0x70; inb 0x84; inb 0x71; inb 0x84`.
//!
//! Instruction counts come from `kernels/freebsd-1998-07-i386.toml`; each block is `Step::Code`,
//! which an interrupt of another class cuts at an instruction boundary once `Xresume` has
//! enabled interrupts.

use super::linux::Entries;
use super::program::{Builder, Entry, Idt, Operand, Step, Var, NO_ENTRY};
use super::spl::{SplPolicy, SplStep};
use super::{Kernel, SPURIOUS_8259};
use crate::hw::pic8259::{CASCADE_IR, MASTER_CMD, MASTER_DATA, SLAVE_CMD, SLAVE_DATA};
use crate::workload::SplClass;
use serde::{Deserialize, Serialize};
use Step::*;

/// The 8259 pair's vector base (`ICU_OFFSET`).
pub const ICU_OFFSET: u8 = 0x20;
/// The unused port `rtcin` reads for a delay (`inb 0x84`, a DMA page register).
const DELAY_PORT: u16 = 0x84;

/// The `INTR` macro of `icu_vector.s` and its neighbours, in instructions (`[stub]` of the kernel file).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StubCosts {
    /// Pushes and segment loads before the IMR write.
    pub entry: u32,
    /// From the EOI to the `cpl` test.
    pub check: u32,
    /// `Xresume`: counters, `cpl` raise, `sti`, the call.
    pub resume: u32,
    /// After the handler: `cli`, the IMR byte, then (after the write) the jump to `doreti`.
    pub exit: u32,
    /// `doreti` or the deferral, to the `iret`.
    pub leave: u32,
    /// `splz`: find the pending bit and `int` to the stub.
    pub splz: u32,
}

/// An IRQ the kernel has a handler for.
#[derive(Clone, Debug)]
pub struct Intr {
    pub irq: u8,
    /// The handler's program.
    pub handler: Entry,
    /// Its class mask (`intr_mask[irq]`: the clock's is every hardware interrupt, the
    /// statistics clock's none).
    pub mask: u32,
    /// Counts of this IRQ's interrupts handled.
    pub count: Var,
}

/// Per-IRQ counts of what `cpl` did to an interrupt: held off, replayed by `doreti`, by `splz`.
#[derive(Copy, Clone, Debug)]
pub struct Deferrals {
    pub deferred: Var,
    pub by_doreti: Var,
    pub by_splz: Var,
}

/// The kernel's `cpl`, `ipending` and `imen` variables.
#[derive(Copy, Clone, Debug)]
pub struct BsdVars {
    pub cpl: Var,
    pub ipending: Var,
    pub imen: Var,
}

/// Build the interrupt paths for `intrs` (the class masks in `class_masks`, by [`SplClass`]),
/// the idle loop, and the kernel's dispatch tables. Returns each IRQ's deferral counts.
pub fn link(
    k: &mut Kernel,
    st: &StubCosts,
    intrs: &[Intr],
    class_masks: [u32; 3],
) -> (BsdVars, Vec<(u8, Deferrals)>) {
    let used: u16 = intrs.iter().fold(1 << CASCADE_IR, |m, i| m | 1 << i.irq);
    let v = BsdVars {
        cpl: k.new_var(0),
        ipending: k.new_var(0),
        // INTREN: every line with a handler, and the cascade, unmasked.
        imen: k.new_var(u64::from(!used)),
    };
    let mut policy = SplPolicy::new(v.cpl, v.ipending);
    policy.masks[SplClass::Tty as usize] = class_masks[0];
    policy.masks[SplClass::Net as usize] = class_masks[1];
    policy.masks[SplClass::Bio as usize] = class_masks[2];

    let leave = k.code.add("doreti_exit", vec![Code(st.leave), Iret].into());
    let imr = |irq: u8| {
        if irq < 8 {
            Out(MASTER_DATA, Operand::VarByte(v.imen, 0))
        } else {
            Out(SLAVE_DATA, Operand::VarByte(v.imen, 8))
        }
    };
    let eoi = Operand::Const(0x20);
    let mut counts = Vec::new();
    for i in intrs {
        let (irq, bit) = (i.irq, 1u32 << i.irq);
        let d = Deferrals {
            deferred: k.new_var(0),
            by_doreti: k.new_var(0),
            by_splz: k.new_var(0),
        };
        counts.push((irq, d));
        let resume = k.code.add(format!("Xresume{irq}"), {
            let b: Builder = vec![
                Code(st.resume),
                SplStep::SplEnter(i.mask).into(),
                Inc(i.count),
                Sti,
                Call(i.handler),
                Cli,
                Code(st.exit),
                ClearBits(v.imen, bit),
                imr(irq),
                SplStep::Doreti.into(),
                Goto(leave),
            ]
            .into();
            b
        });
        let mut b: Builder = vec![Code(st.entry), SetBits(v.imen, bit), imr(irq)].into();
        if irq >= 8 {
            b.push(Out(SLAVE_CMD, eoi));
        }
        b.push(Out(MASTER_CMD, eoi)).push(Code(st.check));
        let held = b.here() + 2;
        b.push(BranchIfSet(v.cpl, bit, held)).push(Goto(resume));
        // Held off: noted in ipending, left masked.
        b.push(SetBits(v.ipending, bit))
            .push(Inc(d.deferred))
            .push(Goto(leave));
        let stub = k.code.add(format!("Xintr{irq}"), b);
        policy.doreti[usize::from(irq)] = k.code.add(
            format!("doreti -> Xresume{irq}"),
            vec![Inc(d.by_doreti), Goto(resume)].into(),
        );
        // splz: `int $ICU_OFFSET + irq`: the gate, then the stub from the top.
        policy.splz[usize::from(irq)] = k.code.add(
            format!("splz -> Xintr{irq}"),
            vec![Inc(d.by_splz), Code(st.splz), Vectoring, Goto(stub)].into(),
        );
        k.idt[Idt::Pic as usize * 256 + usize::from(ICU_OFFSET + irq)] = stub;
    }
    // A vector nobody has a stub for (a spurious interrupt of a line without one).
    let stray = k.code.add(
        "isa_strayintr",
        vec![Inc(SPURIOUS_8259), Goto(leave)].into(),
    );
    for vector in ICU_OFFSET..ICU_OFFSET + 16 {
        let e = &mut k.idt[Idt::Pic as usize * 256 + usize::from(vector)];
        if *e == NO_ENTRY {
            *e = stray;
        }
    }
    // The CPU's side of an interrupt from the 8259: INTA, then the gate to the stub.
    let interrupt_pic = k.code.add(
        "INTR",
        vec![IntAck, TakeVector, Vectoring, JumpVector(Idt::Pic)].into(),
    );
    // The idle loop: process work while there is some, then `sti; hlt`.
    let idle = k.code.add(
        "idle",
        vec![Sti, Work { idle: 2 }, Halt { sti: true }, Jump(1)].into(),
    );
    k.entries = Entries {
        idle,
        interrupt_apic: NO_ENTRY,
        interrupt_pic,
        tick_sched_timer: NO_ENTRY,
        hrtimer_wakeup: NO_ENTRY,
        sched_rt_period_timer: NO_ENTRY,
        ksoftirqd: NO_ENTRY,
        events_worker: NO_ENTRY,
    };
    k.spl = Some(policy);
    k.workload = true;
    (v, counts)
}

/// `rtcintr`: `while (rtcin(RTC_INTR) & RTCIR_PERIOD) statclock()`, the flags kept in `reg_c`.
pub fn rtcintr(k: &mut Kernel, statclock: u32, reg_c: Var) -> Entry {
    use crate::hw::regs::mc146818::{PERIODIC_FLAG, REG_C};
    let mut b: Builder = vec![
        Out(0x70, Operand::Const(u32::from(REG_C))),
        In(DELAY_PORT),
        In(0x71),
        Store(reg_c),
        In(DELAY_PORT),
    ]
    .into();
    let test = b.here();
    b.push(BranchIfSet(reg_c, PERIODIC_FLAG, 0));
    b.push(Return(Operand::Const(0)));
    let body = b.here();
    b.patch(test, body);
    b.push(Code(statclock)).push(Jump(0));
    k.code.add("rtcintr", b)
}
