//! The stable runner's mutator: without libFuzzer's coverage feedback it cannot climb towards
//! new code, so it stays near the corpus, where real kernels' inputs already reach most of each
//! parser, and applies the edits that break parsers of text and binary formats: bytes flipped
//! and replaced, boundary integers written over bytes and digit runs (`u32::MAX`, `u64::MAX`,
//! 2^64, the ring buffer's 27-bit fields), ranges deleted, repeated and spliced from another
//! corpus file, and the target's tokens inserted. libFuzzer (`fuzz/run.sh` on nightly) goes
//! deeper; this is what CI can run on stable in seconds.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Inputs grow no longer than this (a page is 4 KiB; the captured trees and shards are
/// larger, and a mutation of one keeps at least its length).
pub const MAX_LEN: usize = 256 * 1024;

const INTERESTING_U64: &[u64] = &[
    0,
    1,
    0x7f,
    0xff,
    0x7fff,
    0xffff,
    (1 << 27) - 1,
    1 << 27,
    (1 << 31) - 1,
    1 << 31,
    u32::MAX as u64,
    1 << 32,
    (1 << 59) - 1,
    i64::MAX as u64,
    1 << 63,
    u64::MAX,
];

const INTERESTING_DECIMAL: &[&str] = &[
    "0",
    "-1",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "1e308",
    "1e309",
    "nan",
];

/// A seeded source of mutations over a corpus.
pub struct Mutator {
    rng: Xoshiro256PlusPlus,
    tokens: Vec<&'static [u8]>,
}

impl Mutator {
    pub fn new(seed: u64, tokens: &[&'static str]) -> Self {
        Mutator {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            tokens: tokens.iter().map(|t| t.as_bytes()).collect(),
        }
    }

    /// A new input: one of `corpus` (or nothing, where it is empty) with 1 to 8 edits.
    pub fn next(&mut self, corpus: &[Vec<u8>]) -> Vec<u8> {
        let mut input = if corpus.is_empty() {
            Vec::new()
        } else {
            corpus[self.rng.gen_range(0..corpus.len())].clone()
        };
        let edits = 1 << self.rng.gen_range(0..4);
        for _ in 0..edits {
            self.edit(&mut input, corpus);
        }
        input.truncate(MAX_LEN);
        input
    }

    fn at(&mut self, input: &[u8]) -> usize {
        if input.is_empty() {
            0
        } else {
            self.rng.gen_range(0..input.len())
        }
    }

    /// A range of `input`, short more often than long.
    fn range(&mut self, input: &[u8]) -> std::ops::Range<usize> {
        let start = self.at(input);
        let most = input.len() - start;
        let len = match self.rng.gen_range(0..4) {
            0 => most,
            _ => most.min(1 << self.rng.gen_range(0..8)),
        };
        start..start + self.rng.gen_range(0..=len)
    }

    fn edit(&mut self, input: &mut Vec<u8>, corpus: &[Vec<u8>]) {
        match self.rng.gen_range(0..11) {
            0 if !input.is_empty() => {
                let i = self.at(input);
                input[i] ^= 1 << self.rng.gen_range(0..8);
            }
            1 if !input.is_empty() => {
                let i = self.at(input);
                input[i] = self.rng.gen();
            }
            2 => {
                // A boundary integer over the bytes, little-endian as the kernel writes them.
                let v = INTERESTING_U64[self.rng.gen_range(0..INTERESTING_U64.len())];
                let width = [1, 2, 4, 8][self.rng.gen_range(0..4)];
                let i = self.at(input);
                let bytes = v.to_le_bytes();
                for (k, b) in bytes[..width].iter().enumerate() {
                    if let Some(slot) = input.get_mut(i + k) {
                        *slot = *b;
                    }
                }
            }
            3 => {
                // A boundary number in place of a run of digits (or anywhere).
                let n = INTERESTING_DECIMAL[self.rng.gen_range(0..INTERESTING_DECIMAL.len())];
                let r = self.digit_run(input);
                input.splice(r, n.bytes());
            }
            4 if !input.is_empty() => {
                let r = self.range(input);
                input.drain(r);
            }
            5 if !input.is_empty() => {
                let r = self.range(input);
                let copy = input[r].to_vec();
                let i = self.at(input);
                input.splice(i..i, copy);
            }
            6 if !corpus.is_empty() => {
                let other = &corpus[self.rng.gen_range(0..corpus.len())];
                let r = self.range(other);
                let piece = other[r].to_vec();
                let here = self.range(input);
                input.splice(here, piece);
            }
            7 if !self.tokens.is_empty() => {
                let t = self.tokens[self.rng.gen_range(0..self.tokens.len())];
                let i = self.at(input);
                input.splice(i..i, t.iter().copied());
            }
            8 => {
                let n = self.rng.gen_range(1..=16);
                let i = self.at(input);
                let bytes: Vec<u8> = (0..n).map(|_| self.rng.gen()).collect();
                input.splice(i..i, bytes);
            }
            9 if !input.is_empty() => {
                // A line removed or repeated: rows, fields and entries come one per line.
                let lines: Vec<usize> = std::iter::once(0)
                    .chain(
                        input
                            .iter()
                            .enumerate()
                            .filter(|(_, &b)| b == b'\n')
                            .map(|(i, _)| i + 1),
                    )
                    .filter(|&i| i < input.len())
                    .collect();
                let k = self.rng.gen_range(0..lines.len());
                let end = lines.get(k + 1).copied().unwrap_or(input.len());
                if self.rng.gen() {
                    input.drain(lines[k]..end);
                } else {
                    let line = input[lines[k]..end].to_vec();
                    input.splice(lines[k]..lines[k], line);
                }
            }
            _ => {
                let len = self.rng.gen_range(0..=input.len());
                input.truncate(len);
            }
        }
    }

    /// A run of ASCII digits near a random place, or an empty range there.
    fn digit_run(&mut self, input: &[u8]) -> std::ops::Range<usize> {
        let i = self.at(input);
        match input[i.min(input.len())..]
            .iter()
            .position(u8::is_ascii_digit)
        {
            Some(d) => {
                let start = i + d;
                let len = input[start..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                start..start + len
            }
            None => i..i,
        }
    }
}
