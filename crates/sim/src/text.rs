//! Values written as text in the files, parsed into the hardware's types once, as they are
//! read: a bad one is refused at its line and column (or its `--set` flag) with how to write it.
//! For `#[serde(with = "crate::text::bdf")]` and the like.

use serde::de::Error;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub mod bdf {
    use super::*;
    use crate::hw::pcie::Bdf;
    /// The printed form, `003:00:0` (one definition, with the type: `irqlab_stats::pcie`).
    pub fn serialize<S: Serializer>(b: &Bdf, s: S) -> Result<S::Ok, S::Error> {
        irqlab_stats::pcie::serialize_bdf(b, s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bdf, D::Error> {
        Bdf::parse(&String::deserialize(d)?).map_err(D::Error::custom)
    }
}

pub mod pin {
    use super::*;
    use crate::hw::pcie::IntxPin;
    pub fn serialize<S: Serializer>(p: &IntxPin, s: S) -> Result<S::Ok, S::Error> {
        p.letter().to_string().serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<IntxPin, D::Error> {
        IntxPin::parse(&String::deserialize(d)?).map_err(D::Error::custom)
    }
}

pub mod generation {
    use super::*;
    use crate::hw::pcie::LinkGen;
    pub fn serialize<S: Serializer>(g: &LinkGen, s: S) -> Result<S::Ok, S::Error> {
        g.number().serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LinkGen, D::Error> {
        LinkGen::new(u8::deserialize(d)?).map_err(D::Error::custom)
    }
}

pub mod width {
    use super::*;
    use crate::hw::pcie::LinkWidth;
    pub fn serialize<S: Serializer>(w: &LinkWidth, s: S) -> Result<S::Ok, S::Error> {
        w.lanes().serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LinkWidth, D::Error> {
        LinkWidth::new(u32::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// A PIRQ line, "A".."H" in the file, its index 0-7 in the model.
pub mod pirq {
    use super::*;
    pub fn serialize<S: Serializer>(i: &u8, s: S) -> Result<S::Ok, S::Error> {
        char::from(b'A' + i).to_string().serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
        let t = String::deserialize(d)?;
        match t.as_bytes() {
            [c @ b'A'..=b'H'] => Ok(c - b'A'),
            [c @ b'a'..=b'h'] => Ok(c - b'a'),
            _ => Err(D::Error::custom(format!(
                "'{t}' is not a PIRQ line: the ICH has PIRQA..PIRQH (pirq = \"A\"..\"H\")"
            ))),
        }
    }
}

/// An optional bus:device:function.
pub mod opt_bdf {
    use super::*;
    use crate::hw::pcie::Bdf;
    pub fn serialize<S: Serializer>(b: &Option<Bdf>, s: S) -> Result<S::Ok, S::Error> {
        b.map(|b| b.to_string()).serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Bdf>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| Bdf::parse(&t).map_err(D::Error::custom))
            .transpose()
    }
}

/// An optional INTx pin.
pub mod opt_pin {
    use super::*;
    use crate::hw::pcie::IntxPin;
    pub fn serialize<S: Serializer>(p: &Option<IntxPin>, s: S) -> Result<S::Ok, S::Error> {
        p.map(|p| p.letter().to_string()).serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<IntxPin>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| IntxPin::parse(&t).map_err(D::Error::custom))
            .transpose()
    }
}
