//! PCI addresses, as the model names its functions and the plans print them.

use serde::{Serialize, Serializer};
use std::fmt;

/// Bus/device/function, printed as the analyzer of seed 000's Figure 7 does (`003:00:0`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Bdf {
    /// Bus number.
    pub bus: u8,
    /// Device (0..31).
    pub dev: u8,
    /// Function (0..7).
    pub func: u8,
}

impl Bdf {
    /// `bus:dev:func`.
    pub const fn new(bus: u8, dev: u8, func: u8) -> Self {
        Bdf { bus, dev, func }
    }
    /// Parse `BBB:DD:F` (Figure 7) or `BB:DD.F` (lspci), decimal bus and device as Figure 7
    /// prints them.
    pub fn parse(s: &str) -> Result<Self, String> {
        let err = || format!("'{s}' is not a bus:device:function such as \"003:00:0\"");
        let (bus, rest) = s.split_once(':').ok_or_else(err)?;
        let (dev, func) = rest.split_once([':', '.']).ok_or_else(err)?;
        let bus: u8 = bus.parse().map_err(|_| err())?;
        let dev: u8 = dev.parse().map_err(|_| err())?;
        let func: u8 = func.parse().map_err(|_| err())?;
        if dev > 31 || func > 7 {
            return Err(format!(
                "{s}: device must be 0..31 and function 0..7 (PCI configuration addressing)"
            ));
        }
        Ok(Bdf { bus, dev, func })
    }
}

impl fmt::Display for Bdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:03}:{:02}:{}", self.bus, self.dev, self.func)
    }
}

/// A [`Bdf`] as the string it prints (`003:00:0`), as the model's files write it.
pub fn serialize_bdf<S: Serializer>(b: &Bdf, s: S) -> Result<S::Ok, S::Error> {
    b.to_string().serialize(s)
}
