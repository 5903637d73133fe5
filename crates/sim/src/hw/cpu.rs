//! The CPU core's timing: its clock, how fast it runs kernel code, and the fixed costs of taking
//! an interrupt. Kernel code paths are given in instructions (a property of the kernel, see
//! `kernels/`); the core turns them into time with its clock and cycles per instruction.

use crate::engine::SimDuration;

#[derive(Clone, Debug)]
pub struct CpuTiming {
    pub clock_hz: f64,
    /// Average cycles per instruction on warm kernel interrupt paths.
    pub cycles_per_instruction: f64,
    /// Microcoded interrupt delivery: IDT gate lookup, stack switch, pushing EFLAGS/CS/EIP.
    pub interrupt_vectoring_cycles: f64,
    /// IRET back to the interrupted context.
    pub iret_cycles: f64,
    /// One access to a Local APIC register (on the core, no bus cycle).
    pub lapic_access_cycles: f64,
    /// The interrupt gate's extra work when it interrupts user mode (stack switch, segment
    /// loads).
    pub privilege_change_cycles: f64,
    /// Leaving HLT (C1) when an interrupt arrives.
    pub halt_exit: SimDuration,
}

/// [`CpuTiming`] turned into integer costs once, so the hot path does no float work.
#[derive(Clone, Debug)]
pub struct CpuCosts {
    /// One instruction, in femtoseconds (keeps sub-picosecond precision per instruction).
    fs_per_instruction: u64,
    vectoring: SimDuration,
    iret: SimDuration,
    lapic_access: SimDuration,
    privilege_change: SimDuration,
}

impl CpuTiming {
    pub fn cycles(&self, c: f64) -> SimDuration {
        SimDuration::from_cycles(c, self.clock_hz)
    }
    pub fn costs(&self) -> CpuCosts {
        CpuCosts {
            fs_per_instruction: (self.cycles_per_instruction * 1e15 / self.clock_hz).round() as u64,
            vectoring: self.cycles(self.interrupt_vectoring_cycles),
            iret: self.cycles(self.iret_cycles),
            lapic_access: self.cycles(self.lapic_access_cycles),
            privilege_change: self.cycles(self.privilege_change_cycles),
        }
    }
}

impl CpuCosts {
    pub fn instructions(&self, n: u32) -> SimDuration {
        SimDuration::from_ps((u64::from(n) * self.fs_per_instruction + 500) / 1000)
    }
    pub fn vectoring(&self) -> SimDuration {
        self.vectoring
    }
    pub fn iret(&self) -> SimDuration {
        self.iret
    }
    pub fn lapic_access(&self) -> SimDuration {
        self.lapic_access
    }
    pub fn privilege_change(&self) -> SimDuration {
        self.privilege_change
    }
}
