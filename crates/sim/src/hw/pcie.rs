//! PCI Express: link generations and widths, TLPs and their size on the wire, and a link that
//! serializes TLPs one after another in each direction.
//!
//! Sources: PCI Express Base Specification (rates and encodings: 2.5/5 GT/s with 8b/10b for
//! Gen1-2, 8/16/32 GT/s with 128b/130b for Gen3-5; TLP headers: 3 DW for 32-bit memory requests,
//! I/O requests and completions, 4 DW for 64-bit memory requests and all messages, section 2.2).
//! Framing: Gen1/2 send STP (1 B) + sequence number (2 B) + TLP + LCRC (4 B) + END (1 B) = 8 B;
//! Gen3+ send a 4 B STP token that carries the sequence number, plus the 4 B LCRC = 8 B
//! (base spec 4.2.2.3; the same 8 B as pcie-bench's `pcie-model/model/pcie.py`).

use crate::engine::{SimDuration, SimTime, Stream};
use serde::Serialize;

/// Bytes of framing and data-link overhead around every TLP on the wire.
pub const TLP_FRAMING_BYTES: u32 = 8;

/// PCIe generation 1 to 5.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LinkGen(u8);

impl LinkGen {
    pub fn new(generation: u8) -> Result<Self, String> {
        if (1..=5).contains(&generation) {
            Ok(LinkGen(generation))
        } else {
            Err(format!(
                "PCIe generation {generation} is not modelled; use 1 (2.5 GT/s), 2 (5), 3 (8), 4 (16) or 5 (32)"
            ))
        }
    }
    pub fn number(self) -> u8 {
        self.0
    }
    /// Raw transfer rate per lane in transfers (bits) per second.
    pub fn transfers_per_s(self) -> f64 {
        [2.5e9, 5e9, 8e9, 16e9, 32e9][usize::from(self.0 - 1)]
    }
    /// Time one lane takes to send one byte, in attoseconds: exact for every generation
    /// (Gen1 4 ns; Gen3 8.125 bits at 8 GT/s = 1.015625 ns; Gen5 0.25390625 ns).
    pub fn attoseconds_per_byte(self) -> u64 {
        [
            4_000_000_000,
            2_000_000_000,
            1_015_625_000,
            507_812_500,
            253_906_250,
        ][usize::from(self.0 - 1)]
    }
    /// Line bits sent per payload byte: 10 for 8b/10b, 8 * 130/128 for 128b/130b.
    pub fn line_bits_per_byte(self) -> f64 {
        if self.0 <= 2 {
            10.0
        } else {
            8.0 * 130.0 / 128.0
        }
    }
}

/// Lane count. PCIe defines x1, x2, x4, x8, x12, x16 and x32 (base spec 4.2.4.x link width
/// negotiation); anything else cannot be trained.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LinkWidth(u8);

impl LinkWidth {
    pub fn new(lanes: u32) -> Result<Self, String> {
        match lanes {
            1 | 2 | 4 | 8 | 12 | 16 | 32 => Ok(LinkWidth(lanes as u8)),
            _ => Err(format!(
                "a x{lanes} link does not exist in PCI Express; widths are x1, x2, x4, x8, x12, x16 or x32"
            )),
        }
    }
    pub fn lanes(self) -> u32 {
        u32::from(self.0)
    }
}

/// One PCIe (or PCIe-like, such as DMI) link's physical parameters.
#[derive(Copy, Clone, Debug)]
pub struct LinkConfig {
    pub gen: LinkGen,
    pub width: LinkWidth,
    /// Transmitter + receiver pipeline (PHY and data-link layer) and flight time: the delay from
    /// a TLP's last symbol leaving the transmitter to the receiver handing it up.
    pub pipeline_latency: SimDuration,
}

impl LinkConfig {
    /// Time to put `bytes` (TLP plus framing) on the wire: bytes are striped over the lanes, one
    /// symbol per lane per symbol time.
    pub fn serialization(&self, bytes: u32) -> SimDuration {
        let per_lane_bytes = u64::from(bytes.div_ceil(self.width.lanes()));
        SimDuration::from_ps(
            (per_lane_bytes * self.gen.attoseconds_per_byte() + 500_000) / 1_000_000,
        )
    }
}

/// Direction on a link: downstream (away from the root complex) or upstream.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Dir {
    Down,
    Up,
}

/// What lies between a device and its root port besides the link itself: switches, and bit
/// errors that the data-link layer repairs by replaying the TLP.
#[derive(Clone, Debug, Default)]
pub struct LinkPath {
    /// PCIe switches between the device and the root port. Each adds its port-to-port
    /// (cut-through) latency and one more link segment with the same error rate.
    pub switches: u8,
    pub switch_latency: SimDuration,
    /// Bit error rate of each link segment (the base spec requires at most 1e-12).
    pub bit_error_rate: f64,
    /// From the end of a corrupted TLP to the start of its replay: the receiver's NAK
    /// scheduling (the Ack/Nak latency limit), the NAK DLLP's trip back, and the replay start.
    pub replay_delay: SimDuration,
    /// Draws the bit errors; only used when `bit_error_rate > 0`.
    pub rng: Option<Stream>,
    /// TLPs that had to be replayed.
    pub replays: u64,
}

/// A link with a FIFO transmitter in each direction.
#[derive(Clone, Debug)]
pub struct Link {
    pub cfg: LinkConfig,
    pub path: LinkPath,
    busy_until: [SimTime; 2],
    /// Serialization time of every TLP size up to `SMALL_TLP_BYTES`, computed once: interrupt
    /// traffic is all small TLPs, and this saves two divisions per crossing.
    small: Vec<SimDuration>,
}

/// Replays of one TLP before the link would retrain (REPLAY_NUM is a 2-bit counter).
const MAX_REPLAYS: u32 = 4;

/// Largest TLP (framing included) whose serialization time is tabulated.
const SMALL_TLP_BYTES: u32 = 64;

/// When a TLP occupied a link: first symbol out, last symbol out, handed up at the far end.
#[derive(Copy, Clone, Debug)]
pub struct Transmission {
    pub start: SimTime,
    pub end: SimTime,
    pub arrival: SimTime,
}

impl Link {
    pub fn new(cfg: LinkConfig) -> Self {
        Link {
            cfg,
            path: LinkPath::default(),
            busy_until: [SimTime::ZERO; 2],
            small: (0..=SMALL_TLP_BYTES)
                .map(|b| cfg.serialization(b))
                .collect(),
        }
    }

    /// Queue a TLP of `bytes` on the wire at `now`; it starts when the transmitter is free.
    pub fn transmit(&mut self, now: SimTime, dir: Dir, bytes: u32) -> Transmission {
        let start = now.max(self.busy_until[dir as usize]);
        let ser = match self.small.get(bytes as usize) {
            Some(d) => *d,
            None => self.cfg.serialization(bytes),
        };
        let mut end = start + ser;
        let mut arrival = end + self.cfg.pipeline_latency;
        if self.path.switches > 0 || self.path.bit_error_rate > 0.0 {
            // Each segment: a corrupted TLP fails its LCRC check at the receiver, which NAKs it;
            // the transmitter replays it from its replay buffer (base spec 3.6). The first
            // segment's transmitter is this one, busy until the replay is through.
            let bits = f64::from(bytes) * self.cfg.gen.line_bits_per_byte();
            // P(at least one bit of the TLP is wrong) = 1 - (1 - BER)^bits.
            let p_error = -(bits * (-self.path.bit_error_rate).ln_1p()).exp_m1();
            for segment in 0..=self.path.switches {
                if segment > 0 {
                    arrival += self.path.switch_latency;
                }
                if let Some(rng) = self.path.rng.as_mut() {
                    use rand::Rng;
                    // After four replays of one TLP (REPLAY_NUM rolls over) the data-link layer
                    // retrains the link (base spec 3.6.2.1); retraining is not modelled, so a
                    // TLP is replayed at most four times.
                    let mut replays = 0;
                    while replays < MAX_REPLAYS && rng.gen::<f64>() < p_error {
                        replays += 1;
                        self.path.replays += 1;
                        arrival += self.path.replay_delay + ser;
                        if segment == 0 {
                            end += self.path.replay_delay + ser;
                        }
                    }
                }
            }
        }
        *self.busy_until_mut(dir) = end;
        Transmission {
            start,
            end,
            arrival,
        }
    }

    fn busy_until_mut(&mut self, dir: Dir) -> &mut SimTime {
        &mut self.busy_until[dir as usize]
    }
}

// A PCI address is part of the result model too (a planned function's, `irqlab_stats::plan`):
// it is defined there, with its printed form.
pub use irqlab_stats::pcie::Bdf;

/// INTx pin A-D (config-space Interrupt Pin register 1-4).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IntxPin(u8);

impl IntxPin {
    /// INTA + `i` (mod 4): a multi-function device's function `i` on the pin after its
    /// predecessor's.
    pub fn from_index(i: u8) -> Self {
        IntxPin(i % 4)
    }
    /// From a letter "A".."D".
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "A" | "a" => Ok(IntxPin(0)),
            "B" | "b" => Ok(IntxPin(1)),
            "C" | "c" => Ok(IntxPin(2)),
            "D" | "d" => Ok(IntxPin(3)),
            _ => Err(format!(
                "INTx pin '{s}' does not exist: PCI devices have INTA, INTB, INTC and INTD (pin = \"A\"..\"D\")"
            )),
        }
    }
    pub fn index(self) -> u8 {
        self.0
    }
    /// The pin seen upstream of a bridge for a device with this pin at device number `dev`:
    /// (pin + device) mod 4, PCI-to-PCI Bridge Architecture spec 9.1 / PCIe base 2.2.8.1.
    pub fn swizzle(self, dev: u8) -> IntxPin {
        IntxPin((self.0 + dev) % 4)
    }
    pub fn letter(self) -> char {
        (b'A' + self.0) as char
    }
}

/// Message codes this model uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum MsgCode {
    /// Assert_INTx (virtual wire), base spec 2.2.8.1.
    AssertIntx(IntxPin),
    /// Deassert_INTx.
    DeassertIntx(IntxPin),
    /// An EOI message carrying a vector, as the MCH forwards the CPU's EOI for a level-triggered
    /// vector to the I/O controller hub's IO-APIC over DMI (modelled as a vendor-defined message).
    Eoi(u8),
}

/// TLP types.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum TlpKind {
    MemRead,
    MemWrite,
    IoRead,
    IoWrite,
    /// Completion without data (answers an I/O write).
    Cpl,
    /// Completion with data.
    CplD,
    Msg(MsgCode),
    /// The interrupt-acknowledge cycle of an 8259 (x86 INTA), carried from the FSB to the I/O
    /// hub over DMI as a non-posted request whose completion carries the vector.
    IntAck,
}

/// A transaction-layer packet, with the fields the analyzer prints.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Tlp {
    pub kind: TlpKind,
    pub requester: Bdf,
    /// For completions, the completer's ID.
    pub completer: Bdf,
    pub tag: u8,
    pub addr: u64,
    /// Payload length in doublewords (requested length for reads).
    pub len_dw: u16,
    pub data: u32,
}

impl Tlp {
    pub fn header_bytes(&self) -> u32 {
        match self.kind {
            TlpKind::MemRead | TlpKind::MemWrite if self.addr > u64::from(u32::MAX) => 16,
            TlpKind::Msg(_) => 16,
            _ => 12,
        }
    }
    pub fn payload_bytes(&self) -> u32 {
        match self.kind {
            TlpKind::MemWrite | TlpKind::IoWrite | TlpKind::CplD => u32::from(self.len_dw) * 4,
            _ => 0,
        }
    }
    /// Bytes on the wire including framing.
    pub fn wire_bytes(&self) -> u32 {
        self.header_bytes() + self.payload_bytes() + TLP_FRAMING_BYTES
    }
    /// Posted requests (memory writes, messages) need no completion; base spec 2.4.
    pub fn is_posted(&self) -> bool {
        matches!(self.kind, TlpKind::MemWrite | TlpKind::Msg(_))
    }
    /// The short type name, as an analyzer prints it.
    pub fn type_name(&self) -> String {
        let a64 = self.addr > u64::from(u32::MAX);
        match self.kind {
            TlpKind::MemRead => if a64 { "MRd(64)" } else { "MRd(32)" }.into(),
            TlpKind::MemWrite => if a64 { "MWr(64)" } else { "MWr(32)" }.into(),
            TlpKind::IoRead => "IORd".into(),
            TlpKind::IoWrite => "IOWr".into(),
            TlpKind::Cpl => "Cpl".into(),
            TlpKind::CplD => "CplD".into(),
            TlpKind::IntAck => "IntAck".into(),
            TlpKind::Msg(MsgCode::AssertIntx(p)) => format!("Msg Assert_INT{}", p.letter()),
            TlpKind::Msg(MsgCode::DeassertIntx(p)) => format!("Msg Deassert_INT{}", p.letter()),
            TlpKind::Msg(MsgCode::Eoi(v)) => format!("Msg EOI(0x{v:02x})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen1x1() -> LinkConfig {
        LinkConfig {
            gen: LinkGen::new(1).unwrap(),
            width: LinkWidth::new(1).unwrap(),
            pipeline_latency: SimDuration::ZERO,
        }
    }

    #[test]
    fn gen1_x1_moves_a_byte_in_4_ns() {
        // 2.5 GT/s with 8b/10b: 10 bits per byte, 400 ps per bit.
        assert_eq!(gen1x1().serialization(1).as_ps(), 4_000);
        // An MSI (3 DW header + 1 DW payload + 8 B framing = 24 B) takes 96 ns on Gen1 x1.
        let msi = Tlp {
            kind: TlpKind::MemWrite,
            requester: Bdf::new(3, 0, 0),
            completer: Bdf::default(),
            tag: 0,
            addr: 0xFEE0_0000,
            len_dw: 1,
            data: 0x41,
        };
        assert_eq!(msi.wire_bytes(), 24);
        assert_eq!(gen1x1().serialization(msi.wire_bytes()).as_ps(), 96_000);
    }

    #[test]
    fn integer_byte_times_agree_with_rate_and_encoding() {
        for g in 1..=5 {
            let gen = LinkGen::new(g).unwrap();
            let exact_as = gen.line_bits_per_byte() / gen.transfers_per_s() * 1e18;
            let got = gen.attoseconds_per_byte() as f64;
            assert!(
                (got - exact_as).abs() / exact_as < 1e-12,
                "Gen{g}: {got} vs {exact_as}"
            );
        }
    }

    #[test]
    fn gen3_uses_128b130b_and_lanes_stripe() {
        let c = LinkConfig {
            gen: LinkGen::new(3).unwrap(),
            width: LinkWidth::new(8).unwrap(),
            pipeline_latency: SimDuration::ZERO,
        };
        // 24 B over 8 lanes = 3 B per lane = 3 * 8.125 bits at 8 GT/s = 3.046875 ns.
        assert_eq!(c.serialization(24).as_ps(), 3_047);
    }

    #[test]
    fn widths_and_generations_that_pcie_does_not_define_are_refused() {
        assert!(LinkWidth::new(3).unwrap_err().contains("x3"));
        assert!(LinkWidth::new(0).is_err());
        assert!(LinkWidth::new(64).is_err());
        assert!(LinkGen::new(6).is_err());
        assert!(LinkGen::new(0).is_err());
    }

    #[test]
    fn a_busy_transmitter_queues_the_next_tlp() {
        let mut l = Link::new(gen1x1());
        let a = l.transmit(SimTime::ZERO, Dir::Down, 24);
        let b = l.transmit(SimTime::from_ps(10_000), Dir::Down, 24);
        let c = l.transmit(SimTime::from_ps(10_000), Dir::Up, 24);
        assert_eq!(b.start, a.end);
        assert_eq!(
            c.start.as_ps(),
            10_000,
            "the other direction is independent"
        );
    }

    #[test]
    fn swizzle_and_pins() {
        assert_eq!(IntxPin::parse("A").unwrap().swizzle(1).letter(), 'B');
        assert_eq!(IntxPin::parse("D").unwrap().swizzle(1).letter(), 'A');
        assert!(IntxPin::parse("E").unwrap_err().contains("INTA"));
    }

    #[test]
    fn bdf_round_trips_in_figure_7_style() {
        let b = Bdf::parse("003:00:0").unwrap();
        assert_eq!(b.to_string(), "003:00:0");
        assert!(Bdf::parse("0:40:0").is_err());
    }
}
