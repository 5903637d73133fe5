//! The MC146818 real-time clock's periodic interrupt on IRQ 8 (FreeBSD's statistics clock at
//! 128 Hz). The RTC holds its IRQ line until register C is read (index 0x0C written to port
//! 0x70, then a read of port 0x71), so a handler that comes late loses a period rather than
//! queueing one. It runs on its own 32.768 kHz crystal.

use super::{Answer, Effects};
use crate::engine::{SimDuration, SimTime};

// The register map is the datasheet's, shared with the drivers written against it.
pub use crate::hw::regs::mc146818::*;

#[derive(Clone, Debug)]
pub struct Rtc {
    pub irq: u8,
    pub period: SimDuration,
    pub first: SimTime,
    index: u8,
    flag: bool,
}

impl Rtc {
    pub fn new(irq: u8, period: SimDuration, first: SimTime) -> Rtc {
        Rtc {
            irq,
            period,
            first,
            index: 0,
            flag: false,
        }
    }

    pub fn start(&self) -> Effects {
        Effects::default().timer(self.first, 0)
    }

    pub fn timer(&mut self, now: SimTime) -> Effects {
        let e = Effects::default().timer(now + self.period, 0);
        if self.flag {
            return e; // still set: the line is already high
        }
        self.flag = true;
        e.line(self.irq, true)
    }

    pub fn access(&mut self, port: u16, write: Option<u32>) -> Answer {
        let mut a = Answer {
            data: 0,
            delay: SimDuration::ZERO,
            effects: Effects::default(),
        };
        match (port, write) {
            (0x70, Some(v)) => self.index = v as u8 & 0x7F,
            (0x71, None) if self.index == REG_C && self.flag => {
                self.flag = false;
                a.data = PERIODIC_FLAG | 0x80; // PF and IRQF
                a.effects.push(super::Effect::Line(self.irq, false));
            }
            _ => {}
        }
        a
    }
}
